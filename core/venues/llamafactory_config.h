#pragma once
// What LLaMA-Factory needs beside the recipe's YAML (train::recipeToLlamaFactoryYaml, the
// one YAML writer): dataset_info.json for a single training file, and the DeepSpeed JSON
// a recipe's ZeRO stage and offload name (after LLaMA-Factory's
// examples/deepspeed/ds_z{2,3}[_offload]_config.json; interfaces.md).

#include <nlohmann/json.hpp>
#include <string>

#include "core/train/recipe.h"

namespace crosslab::venues {

// {name: {file_name, formatting, columns, tags}} for one alpaca or sharegpt file.
nlohmann::json llamaFactoryDatasetInfo(const std::string& datasetName, const std::string& fileName,
                                       const std::string& formatting);
// "alpaca" or "sharegpt" from a data file's first record (a `conversations` or
// `messages` list: sharegpt); `declared` when it is not "auto". Throws naming the file
// when it cannot be read as JSON or JSON Lines.
std::string dataFormatting(const std::string& path, const std::string& declared = "auto");
// The DeepSpeed JSON of ZeRO `stage` (2 or 3), with optimizer (and, at stage 3,
// parameter) offload to the CPU.
nlohmann::json deepspeedConfig(int stage, bool offload);
inline nlohmann::json deepspeedZero3(bool cpuOffload) { return deepspeedConfig(3, cpuOffload); }

}  // namespace crosslab::venues
