#pragma once
// LoRA on the engine's projection hook: for every targeted (layer, projection) a pair
// A [r, in] (kaiming-uniform, U(±1/sqrt(in)) as PEFT) and B [out, r] (zeros), fp32 with
// gradients; delta(x) = dropout(x) Aᵀ Bᵀ · scaling. Saved and loaded in PEFT's layout.
// Engine-internal header (libtorch types): only crosslab_engine code includes it.

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/model/llama.h"

namespace crosslab::train {

struct LoraSpec {
  int rank = 16;
  double alpha = 32;
  double dropout = 0.0;
  bool rslora = false;
  std::vector<std::string> targets;  // "q_proj" … "down_proj"
  double scaling() const;
};

class LoraAdapter : public model::ProjectionDelta {
 public:
  // Creates A/B for `model`'s layers, A drawn from a CPU generator seeded with `seed`.
  LoraAdapter(const model::LlamaModel& model, LoraSpec spec, std::uint64_t seed);

  at::Tensor delta(size_t layer, model::Proj proj, const at::Tensor& x) const override;

  // Dropout is active only while training (and only when dropout > 0).
  void setTraining(bool on) { training_ = on; }

  // Parameters in a fixed order with their PEFT names (…q_proj.lora_A.weight).
  const std::vector<std::string>& names() const { return names_; }
  std::vector<at::Tensor>& parameters() { return params_; }
  const LoraSpec& spec() const { return spec_; }

  // adapter_config.json + adapter_model.safetensors (F32) into `dir` (each file atomic).
  void save(const std::filesystem::path& dir, const std::string& baseModel) const;
  // Loads tensors saved by save() into the parameters (shapes must match).
  void loadWeights(const std::filesystem::path& safetensorsFile);

 private:
  LoraSpec spec_;
  bool training_ = false;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_;
  // (layer * 7 + proj) -> index of A in params_ (B follows), -1 when not targeted.
  std::vector<int> slot_;
};

// PEFT module path of a projection: "model.layers.3.self_attn.q_proj".
std::string peftModule(size_t layer, model::Proj proj);

// name -> fp32 CPU tensor copy of every tensor in a safetensors file.
std::map<std::string, at::Tensor> readTensors(const std::filesystem::path& file);
// Writes fp32 tensors (made contiguous on CPU) atomically, in the order given.
void writeTensors(const std::filesystem::path& file, const std::vector<std::pair<std::string, at::Tensor>>& tensors);

}  // namespace crosslab::train
