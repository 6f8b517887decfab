#include "core/model/llama_layout.h"

#include <stdexcept>

namespace crosslab::model {

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<ExpectedTensor> llamaTensorLayout(const ModelConfig& c) {
  const int64_t H = c.hiddenSize, I = c.intermediateSize, q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  std::vector<ExpectedTensor> out{{"model.embed_tokens.weight", {c.vocabSize, H}}, {"model.norm.weight", {H}}};
  if (!c.tieWordEmbeddings) out.push_back({"lm_head.weight", {c.vocabSize, H}});
  for (int64_t i = 0; i < c.numLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "input_layernorm.weight", {H}});
    out.push_back({p + "post_attention_layernorm.weight", {H}});
    out.push_back({p + "self_attn.q_proj.weight", {q, H}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, H}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, H}});
    out.push_back({p + "self_attn.o_proj.weight", {H, q}});
    if (c.attentionBias) {
      out.push_back({p + "self_attn.q_proj.bias", {q}});
      out.push_back({p + "self_attn.k_proj.bias", {kv}});
      out.push_back({p + "self_attn.v_proj.bias", {kv}});
      out.push_back({p + "self_attn.o_proj.bias", {H}, false});
    }
    out.push_back({p + "mlp.gate_proj.weight", {I, H}});
    out.push_back({p + "mlp.up_proj.weight", {I, H}});
    out.push_back({p + "mlp.down_proj.weight", {H, I}});
    if (c.mlpBias) {
      out.push_back({p + "mlp.gate_proj.bias", {I}});
      out.push_back({p + "mlp.up_proj.bias", {I}});
      out.push_back({p + "mlp.down_proj.bias", {H}});
    }
  }
  return out;
}

void checkLlamaCheckpoint(const CheckpointFiles& files, const ModelConfig& config) {
  for (const auto& e : llamaTensorLayout(config)) {
    const TensorView v = files.find(e.name);
    if (!v.info) {
      if (e.required) throw std::runtime_error("checkpoint lacks tensor '" + e.name + "'");
      continue;
    }
    if (v.info->shape != e.shape)
      throw std::runtime_error("tensor '" + e.name + "' has shape " + shapeString(v.info->shape) + ", config expects " +
                               shapeString(e.shape));
    const DType d = v.info->dtype;
    if (d != DType::F32 && d != DType::BF16 && d != DType::F16)
      throw std::runtime_error("tensor '" + e.name + "' has dtype " + dtypeName(d) + ", expected F32, BF16 or F16");
  }
}

}  // namespace crosslab::model
