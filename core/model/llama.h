#pragma once
// The Llama forward pass in libtorch, as transformers' LlamaForCausalLM computes it:
// embeddings, RMSNorm (fp32 math), RoPE (llama3 / linear scaling), GQA attention with a
// causal mask, SwiGLU MLP, final norm, LM head (tied or not), optional q/k/v/o biases.
// Engine-internal header: only code compiled into crosslab_engine includes it.
//
// Shapes: B batch, T new tokens, S cached + new tokens, H hidden, nh/nkv heads, hd head_dim.

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "core/model/kv_cache.h"
#include "core/model/model_config.h"

namespace crosslab::model {

class CheckpointFiles;

struct LlamaLayerWeights {
  at::Tensor inputNorm, postNorm;  // [H]
  at::Tensor wq, wk, wv, wo;       // [nh*hd, H], [nkv*hd, H] x2, [H, nh*hd]
  at::Tensor bq, bk, bv, bo;       // undefined unless attention_bias
  at::Tensor wGate, wUp, wDown;    // [I, H], [I, H], [H, I]
  at::Tensor bGate, bUp, bDown;    // undefined unless mlp_bias
};

struct LlamaWeights {
  at::Tensor embed;      // [vocab, H]
  at::Tensor finalNorm;  // [H]
  at::Tensor lmHead;     // [vocab, H]; the embedding matrix itself when tied
  std::vector<LlamaLayerWeights> layers;
};

class LlamaModel {
 public:
  // Reads config.json and the safetensors weights of `dir`; checks every shape against the
  // config. Weights in `dtype` on `device` (no copy when the file already matches on CPU).
  static LlamaModel load(const std::filesystem::path& dir, at::ScalarType dtype, at::Device device);

  // ids [B, T] int64 -> final hidden states [B, T, H]. With a cache, row b continues at
  // position cache->length(b) and the new keys/values are appended to it.
  at::Tensor hidden(const at::Tensor& ids, KvCache* cache = nullptr) const;
  // hidden [B, T, H] -> logits [B, T, vocab] in fp32.
  at::Tensor logits(const at::Tensor& hidden) const;
  at::Tensor forward(const at::Tensor& ids, KvCache* cache = nullptr) const { return logits(hidden(ids, cache)); }

  KvCache makeCache(int64_t batch, int64_t capacity) const;

  // Merges a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) into the
  // weights: W += scaling * B A, computed in fp32 (scaling = lora_alpha / r, or
  // lora_alpha / sqrt(r) with use_rslora). Throws naming the bad file or tensor.
  void mergeLoraAdapter(const std::filesystem::path& adapterDir);

  const ModelConfig& config() const { return config_; }
  LlamaWeights& weights() { return weights_; }  // trainers attach LoRA around these
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 private:
  LlamaModel(ModelConfig config, at::ScalarType dtype, at::Device device);
  at::Tensor attention(const LlamaLayerWeights& w, const at::Tensor& h, const at::Tensor& cos, const at::Tensor& sin,
                       const at::Tensor& positions, KvCache* cache, size_t layer) const;
  at::Tensor mlp(const LlamaLayerWeights& w, const at::Tensor& h) const;

  ModelConfig config_;
  at::ScalarType dtype_;
  at::Device device_;
  at::Tensor invFreq_;  // [hd/2] fp32
  LlamaWeights weights_;
  std::shared_ptr<CheckpointFiles> files_;  // keeps the memory maps alive for zero-copy weights
};

// inv_freq of RoPE with the config's scaling (transformers' _compute_llama3_parameters), fp32.
std::vector<float> ropeInverseFrequencies(const ModelConfig& config);

}  // namespace crosslab::model
