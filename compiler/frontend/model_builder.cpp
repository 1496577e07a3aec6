// Family builders. A decoder layer, pre-norm, as the families share it:
//
//   h1 = norm(x); q, k, v = h1 Wq, h1 Wk, h1 Wv; (rope on q and k)
//   q grouped per KV head [kv_heads, heads/kv_heads * rows, head_dim]; s = q K^T (decode: K the ctx cached
//   keys and the token's own, kv_append filling the cache's last position on chip);
//   p = softmax(s * scale); o = p V; r = x + o Wo
//   h2 = norm(r); y = r + mlp(h2), mlp = act(h2 W1 + b1) W2 (GPT-2) or (act(h2 Wg) * h2 Wu) Wd (gated)
//
// Prefill runs the prompt's rows through the same layer. Its attention is causal and on chip: K and V
// made with q (under GQA each KV head copied to the heads/kv_heads query heads that share it, as
// repeat_kv does), the heads split and merged by reshapes and transposes, the scores and P.V holding K
// and V (row r reads key r as it is made). A prompt whose K no kernel could hold within the budget groups
// all query rows per KV head instead, attending to the prompt's keys and values read back from HBM as if
// they were there, not masked (an upper bound of the attention's work, optimistic about its waiting).
// Positions: learned embeddings are added outside the layer; rope is applied to q and k. LayerNorm
// carries scale and bias, RMSNorm a scale.
#include "compiler/frontend/model_builder.h"

namespace stc {

namespace {

class Builder {
 public:
  Builder(const ModelSpec& m, const std::string& name) : m_(m) {
    g_.name = name;
    g_.loc = m.loc;
  }

  Expr dim(int64_t v) { return Expr(v); }
  void input(const std::string& name, std::vector<Expr> shape) { g_.inputs.push_back({name, shape, "f32", m_.loc}); }
  void weight(const std::string& name, std::vector<Expr> shape) { g_.weights.push_back({name, shape, "f32", m_.loc}); }
  const std::string& op(const std::string& kind, std::vector<std::string> inputs, const std::string& output,
                        std::map<std::string, AttrValue> attrs = {}) {
    Op o;
    o.name = output + "_op";
    o.op = kind;
    o.inputs = std::move(inputs);
    o.output = output;
    o.attrs = std::move(attrs);
    o.loc = m_.loc;
    g_.ops.push_back(o);
    return g_.ops.back().output;
  }
  std::string norm(const std::string& x, const std::string& prefix) {
    weight(prefix + "_g", {dim(m_.hidden)});
    if (m_.norm == "layernorm") {
      weight(prefix + "_b", {dim(m_.hidden)});
      return op("layernorm", {x, prefix + "_g", prefix + "_b"}, prefix);
    }
    return op("rmsnorm", {x, prefix + "_g"}, prefix);
  }

  // The layer over `rows` rows of x, attending to a cache of `keys` keys (an expression), or, when
  // `onChip`, causally to the keys and values it makes.
  void layer(int64_t rows, const Expr& keys, bool onChip = false) {
    int64_t D = m_.hidden, dh = m_.headDim, H = m_.heads, KVH = m_.kvHeads, G = H / KVH;
    input("x", {dim(rows), dim(D)});
    // Decode attends to the cached keys and the token's own: the caches have room for it (ctx + 1
    // positions, the last filled on chip by kv_append). A prompt attends to its own rows: made on chip,
    // or read back as the caches (a K too large to hold).
    bool decode = rows == 1 && !keys.isConstant();
    Expr positions = decode ? Expr::parse(keys.str() + " + 1") : keys;
    if (!onChip) {
      input("k_cache", {dim(KVH), dim(dh), positions});
      input("v_cache", {dim(KVH), positions, dim(dh)});
    }
    std::string h1 = norm("x", "ln1");
    weight("w_q", {dim(D), dim(H * dh)});
    weight("w_k", {dim(D), dim(KVH * dh)});
    weight("w_v", {dim(D), dim(KVH * dh)});
    std::string q = op("matmul", {h1, "w_q"}, "q");
    std::string k = op("matmul", {h1, "w_k"}, "k_new");
    std::string v = op("matmul", {h1, "w_v"}, "v_new");
    if (m_.rope) {  // per head; a decoded token sits after the keys already cached, a prompt's rows at 0..
      std::map<std::string, AttrValue> at = {{"head_dim", dh}};
      if (rows == 1 && !keys.isConstant()) at["offset"] = keys.str();
      if (m_.ropeTheta != 10000) at["theta"] = m_.ropeTheta;
      q = op("rope", {q}, "q_rot", at);
      k = op("rope", {k}, "k_rot", at);
    }
    std::string o;
    weight("scale", {dim(1)});
    if (onChip) {
      // A prompt attends causally to its own keys and values, made on chip with its queries: the heads split
      // by a reshape and a transpose as model code writes them, the scores and P.V holding K and V
      // (Kernel::heldKeys), the heads merged back.
      auto split = [&](const std::string& t, const std::string& name, std::vector<int64_t> perm) {
        std::string r = op("reshape", {t}, name + "_split", {{"shape", std::vector<int64_t>{rows, H, dh}}});
        return op("transpose", {r}, name, {{"perm", perm}});
      };
      // GQA: each KV head copied to the G query heads that share it (repeat_kv), so that every query
      // head reads its own held K and V.
      auto repeat = [&](const std::string& t, const std::string& name) {
        if (G == 1) return t;
        std::string r =
            op("reshape", {t}, name + "_per_kv_head", {{"shape", std::vector<int64_t>{rows, KVH, 1, dh}}});
        std::string e = op("add", {r, "kv_copies"}, name + "_copied");
        return op("reshape", {e}, name + "_repeated", {{"shape", std::vector<int64_t>{rows, H * dh}}});
      };
      if (G > 1) {  // zeros, known: the add broadcasts each KV head G times
        weight("kv_copies", {dim(G), dim(1)});
        g_.values["kv_copies"] = std::vector<float>(G, 0.0f);
      }
      std::string qh = split(q, "q_heads", {1, 0, 2});
      std::string kt = split(repeat(k, "k"), "k_heads", {1, 2, 0});
      std::string vh = split(repeat(v, "v"), "v_heads", {1, 0, 2});
      std::string s = op("matmul", {qh, kt}, "scores");
      std::string ss = op("mul", {s, "scale"}, "scaled");
      std::string p = op("softmax", {ss}, "probs", {{"axis", int64_t{-1}}, {"causal", int64_t{1}}});
      std::string oh = op("matmul", {p, vh}, "mixed");
      std::string ot = op("transpose", {oh}, "mixed_rows", {{"perm", std::vector<int64_t>{1, 0, 2}}});
      o = op("reshape", {ot}, "attn", {{"shape", std::vector<int64_t>{rows, H * dh}}});
    } else {
      std::string qh = op("reshape", {q}, "q_heads", {{"shape", std::vector<int64_t>{KVH, G * rows, dh}}});
      std::string keysIn =
          decode ? op("kv_append", {"k_cache", k}, "k_all", {{"axis", int64_t{2}}}) : "k_cache";
      std::string valuesIn =
          decode ? op("kv_append", {"v_cache", v}, "v_all", {{"axis", int64_t{1}}}) : "v_cache";
      std::string s = op("matmul", {qh, keysIn}, "scores");
      std::string ss = op("mul", {s, "scale"}, "scaled");
      std::string p = op("softmax", {ss}, "probs", {{"axis", int64_t{-1}}});
      std::string oh = op("matmul", {p, valuesIn}, "mixed");
      o = op("reshape", {oh}, "attn", {{"shape", std::vector<int64_t>{rows, H * dh}}});
    }
    weight("w_o", {dim(H * dh), dim(D)});
    std::string a = op("matmul", {o, "w_o"}, "attn_out");
    std::string r1 = op("add", {"x", a}, "resid1");
    std::string h2 = norm(r1, "ln2");
    std::string f;
    if (m_.gated) {
      weight("w_gate", {dim(D), dim(m_.ffn)});
      weight("w_up", {dim(D), dim(m_.ffn)});
      weight("w_down", {dim(m_.ffn), dim(D)});
      std::string gate = op("matmul", {h2, "w_gate"}, "gate");
      std::string up = op("matmul", {h2, "w_up"}, "up");
      std::string act = op(m_.activation, {gate}, "gate_act");
      std::string prod = op("mul", {act, up}, "gated");
      f = op("matmul", {prod, "w_down"}, "mlp_out");
    } else {
      weight("w_fc1", {dim(D), dim(m_.ffn)});
      weight("b_fc1", {dim(m_.ffn)});
      weight("w_fc2", {dim(m_.ffn), dim(D)});
      std::string f1 = op("matmul", {h2, "w_fc1", "b_fc1"}, "fc1");
      std::string f2 = op(m_.activation, {f1}, "fc1_act");
      f = op("matmul", {f2, "w_fc2"}, "mlp_out");
    }
    op("add", {r1, f}, "y");
    g_.outputs = {"y", k, v};
  }

  void head() {
    input("x", {dim(1), dim(m_.hidden)});
    std::string h = norm("x", "ln_f");
    int64_t V = paddedVocab(m_);
    if (m_.tiedEmbeddings) {
      weight("embedding", {dim(V), dim(m_.hidden)});
      op("matmul", {h, "embedding"}, "logits", {{"transpose_b", int64_t{1}}});
    } else {
      weight("lm_head", {dim(m_.hidden), dim(V)});
      op("matmul", {h, "lm_head"}, "logits");
    }
    g_.outputs = {"logits"};
  }

  Graph take() { return std::move(g_); }

 private:
  const ModelSpec& m_;
  Graph g_;
};

}  // namespace

int64_t paddedVocab(const ModelSpec& model) { return (model.vocab + 63) / 64 * 64; }

std::vector<std::pair<std::string, std::string>> decodeLayerCaches(const Graph& layer) {
  return {{"k_cache", layer.outputs.at(1)}, {"v_cache", layer.outputs.at(2)}};
}

Graph buildDecodeLayer(const ModelSpec& model) {
  Builder b(model, model.name + "_decode_layer");
  b.layer(1, Expr::parse("ctx"));
  return b.take();
}

int64_t prefillHeldBytes(const ModelSpec& model, int64_t prompt) {
  return prompt * model.kvHeads * model.headDim *
         (model.quant == "w4a8" ? 1 : 4);  // a head per group of copies
}

Graph buildPrefillLayer(const ModelSpec& model, int64_t prompt, int64_t heldBytesLimit) {
  Builder b(model, model.name + "_prefill_layer");
  b.layer(prompt, Expr(prompt), prefillHeldBytes(model, prompt) <= heldBytesLimit);
  return b.take();
}

Graph buildHead(const ModelSpec& model) {
  Builder b(model, model.name + "_head");
  b.head();
  return b.take();
}

namespace {

int64_t weightBytes(const ModelSpec& m, int64_t matmulParams, int64_t otherParams) {
  bool quant = m.quant == "w4a8";
  return quant ? matmulParams / 2 + otherParams : 4 * (matmulParams + otherParams);
}

}  // namespace

int64_t layerWeightBytes(const ModelSpec& m) {
  int64_t D = m.hidden, qd = m.heads * m.headDim, kvd = m.kvHeads * m.headDim;
  int64_t matmul = D * qd + 2 * D * kvd + qd * D + (m.gated ? 3 : 2) * D * m.ffn;
  int64_t other = (m.norm == "layernorm" ? 4 : 2) * D + 1 + (m.gated ? 0 : m.ffn);
  return weightBytes(m, matmul, other);
}

int64_t headWeightBytes(const ModelSpec& m) {
  return weightBytes(m, m.hidden * paddedVocab(m), (m.norm == "layernorm" ? 2 : 1) * m.hidden);
}

int64_t kvBytesPerToken(const ModelSpec& m) {
  return 2 * m.kvHeads * m.headDim * (m.quant == "w4a8" ? 1 : 4);
}

int64_t modelHbmBytes(const ModelSpec& m) {
  return m.layers * (layerWeightBytes(m) + kvBytesPerToken(m) * m.maxCtx) + headWeightBytes(m);
}

}  // namespace stc
