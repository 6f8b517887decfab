#pragma once
// PEFT LoRA adapters applied at run time through LlamaModel's projection-delta hook, per
// batch row: rows are grouped by adapter and each group gets x Aᵀ (scaling·B)ᵀ, rows
// without an adapter get nothing — one batched forward for any mix of adapters.
// Engine-internal header (ATen): only crosslab_engine includes it.

#include <ATen/core/Tensor.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/llama.h"

namespace crosslab::infer {

struct LoraModule {
  at::Tensor a;  // [r, in]: rows offset … offset+r-1 of the layer's stacked A for its input
  int64_t offset = 0;
  at::Tensor b;   // [out, r], already multiplied by the scaling
  // The fused decode step's expand, one of: fp32 models, bᵀ [r, out] in fp32, contiguous; bf16
  // models, b's bits laid out for model::expandBf16 (model::packExpandBf16), half the bytes.
  at::Tensor bt;
  at::Tensor bPacked;
};

struct LoraAdapter {
  std::string name;
  std::vector<std::array<LoraModule, 7>> layers;  // [layer][Proj]; undefined = not adapted
  // [layer][ProjInput]: the A of that input's adapted projections stacked in Proj order, [sum
  // of their ranks, in] (undefined where none is adapted); each module's `a` is a view of it
  std::vector<std::array<at::Tensor, model::kProjInputs>> stacked;
  // [layer][ProjInput]: what the fused decode step reads of them, rows left out (count 0: none)
  std::vector<std::array<model::LoraRows, model::kProjInputs>> fused;
};

// Reads adapter_config.json + adapter_model.safetensors; tensors in `dtype` on `device`,
// shapes checked against `model`. Throws std::runtime_error naming the bad file or tensor.
LoraAdapter loadLoraAdapter(const std::string& name, const std::filesystem::path& dir, const model::LlamaModel& model);

// The delta for one forward pass: rowAdapter[b] = index into `adapters` or -1.
class BatchLoraDelta : public model::ProjectionDelta {
 public:
  BatchLoraDelta(const std::vector<LoraAdapter>& adapters, const std::vector<int>& rowAdapter, at::Device device);
  at::Tensor delta(size_t layer, model::Proj proj, const at::Tensor& x) const override;
  bool rowLora() const override { return true; }
  void loraGroups(size_t layer, model::ProjInput input, std::vector<model::LoraRows>& out) const override;
  bool empty() const { return groups_.empty(); }

 private:
  struct Group {
    int adapter;
    std::vector<int64_t> rowList;  // ascending batch rows
    at::Tensor rows;               // the same, [n] int64 on the device (op-by-op gather/scatter)
  };
  const std::vector<LoraAdapter>& adapters_;
  std::vector<Group> groups_;
  bool wholeBatch_ = false;  // one group covering every row: no gather/scatter
};

}  // namespace crosslab::infer
