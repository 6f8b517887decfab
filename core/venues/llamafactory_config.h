#pragma once
// LLaMA-Factory inputs generated from a recipe (interfaces.md): the LoRA SFT YAML for
// `llamafactory-cli train`, dataset_info.json, and DeepSpeed ZeRO-3 JSON with or
// without CPU offload (after examples/deepspeed/ds_z3[_offload]_config.json).

#include <nlohmann/json.hpp>
#include <string>

#include "core/venues/lora_recipe.h"

namespace crosslab::venues {

// `deepspeedFile` is the path the YAML names (empty when recipe.deepspeed == "none").
std::string llamaFactoryTrainYaml(const LoraRecipe& recipe, const std::string& datasetDir,
                                  const std::string& deepspeedFile);
nlohmann::json llamaFactoryDatasetInfo(const LoraRecipe& recipe);
nlohmann::json deepspeedZero3(bool cpuOffload);

}  // namespace crosslab::venues
