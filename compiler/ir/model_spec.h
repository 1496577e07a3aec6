#pragma once
// An LLM described by its family's hyperparameters (models/*.yaml); the family builder
// (compiler/frontend/model_builder.cpp) turns it into decoder-layer and head graphs.

#include <cstdint>
#include <string>

#include "compiler/ir/diagnostics.h"

namespace stc {

struct ModelSpec {
  std::string name;
  std::string family;         ///< gpt2, llama, qwen, gemma, mistral
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kvHeads = 0;
  int64_t headDim = 0;        ///< default hidden / heads
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t maxCtx = 0;
  std::string norm;           ///< layernorm or rmsnorm
  std::string activation;     ///< gelu or silu
  bool gated = false;         ///< gated MLP: act(x Wg) * (x Wu)
  bool rope = false;          ///< rotary positions (else learned, added at the embedding)
  double ropeTheta = 10000;   ///< rope's base (rope_theta: Qwen2's 1e6, Llama 3's 500000)
  bool tiedEmbeddings = false;
  std::string quant = "w4a8"; ///< w4a8 or none (f32)
  SourceLoc loc;
};

/// Parses and checks a model file; a missing or nonsensical field is refused by name.
ModelSpec parseModel(const std::string& text, const std::string& file);
ModelSpec loadModel(const std::string& path);

}  // namespace stc
