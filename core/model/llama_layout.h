#pragma once
// The tensors a Llama-family checkpoint must hold for its config, with their shapes
// (HF names). Lets `model info` validate a checkpoint without loading libtorch.

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/checkpoint_files.h"
#include "core/model/model_config.h"

namespace crosslab::model {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool required = true;
};

std::vector<ExpectedTensor> llamaTensorLayout(const ModelConfig& config);

// Throws std::runtime_error naming the first missing tensor, the first shape mismatch
// (tensor and both shapes) or a non-float dtype.
void checkLlamaCheckpoint(const CheckpointFiles& files, const ModelConfig& config);

std::string shapeString(const std::vector<int64_t>& shape);  // "[768, 128256]"

}  // namespace crosslab::model
