#pragma once
// Family builders: the graphs of an LLM's decoder layer (decode and prefill) and of its head.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/model_spec.h"

namespace stc {

/// One decoder layer decoding one token against a KV cache of `ctx` tokens in HBM (ctx stays a symbol).
/// Outputs: the layer's output row and the new token's key and value (appended to the cache by the host).
Graph buildDecodeLayer(const ModelSpec& model);
/// A decode layer's caches, each with the output holding the token's new entry (its keys after rope,
/// its values), as (cache input, output) pairs: the host appends one to the other after every token.
std::vector<std::pair<std::string, std::string>> decodeLayerCaches(const Graph& layer);

/// One decoder layer over a prompt of `prompt` tokens. With K (prompt x kv_heads x head_dim, held once per
/// KV head though copied to the query heads sharing it, 8-bit under W4A8, else f32) within heldBytesLimit,
/// its attention is causal and on chip: the scores and P.V hold K and V as the projections make them.
/// Otherwise all query rows are grouped per KV head and attend, unmasked, to the prompt's keys and values
/// read back from HBM.
Graph buildPrefillLayer(const ModelSpec& model, int64_t prompt, int64_t heldBytesLimit = INT64_MAX);
/// The bytes of a prompt's K (or V) that an on-chip causal attention holds in one kernel's buffer.
int64_t prefillHeldBytes(const ModelSpec& model, int64_t prompt);

/// The final norm and the LM head (tied to the embedding table when the model ties them) for one row.
Graph buildHead(const ModelSpec& model);

/// The vocabulary padded to a multiple of 64, as GPT-2 implementations pad 50257 to 50304.
int64_t paddedVocab(const ModelSpec& model);

/// Bytes of one layer's weights and of the head's, in the model's quantization.
int64_t layerWeightBytes(const ModelSpec& model);
int64_t headWeightBytes(const ModelSpec& model);
/// Bytes of one token's keys and values in one layer's caches (8-bit under W4A8, else f32).
int64_t kvBytesPerToken(const ModelSpec& model);
/// What the model keeps in HBM: every layer's weights and KV caches at max_ctx, and the head's weights.
int64_t modelHbmBytes(const ModelSpec& model);

}  // namespace stc
