#pragma once
// The lab recipe as the venue tools need it (remote LLaMA-Factory configs, the fit
// estimate). Read from a JSON file with snake_case keys; defaults are the lab's recipe
// (DESIGN.md): r 16, alpha 32, all linear layers, lr 1e-4, 3 epochs, effective batch 8,
// bf16, cutoff 4096.

#include <nlohmann/json.hpp>
#include <string>

namespace crosslab::venues {

struct LoraRecipe {
  std::string model;                  // path on the box, or a hub id
  std::string dataset = "lab_sft";    // name in dataset_info.json
  std::string datasetFile = "train.json";
  std::string formatting = "alpaca";  // alpaca | sharegpt
  std::string chatTemplate = "llama3";
  int rank = 16;
  int alpha = 32;
  double dropout = 0.0;
  double learningRate = 1e-4;
  double epochs = 3;
  int microBatch = 1;   // per device
  int gradAccum = 8;    // micro × accumulation × devices = effective batch
  int cutoff = 4096;    // tokens
  bool bf16 = true;
  int loggingSteps = 1;
  int saveSteps = 0;    // 0: only at the end
  std::string scheduler = "linear";
  double warmupRatio = 0.0;
  std::string outputDir = "output";
  std::string deepspeed = "none";  // none | z3 | z3_offload
  int gpus = 1;
  bool gradientCheckpointing = true;  // LLaMA-Factory's default

  // Throws std::invalid_argument naming the bad key.
  static LoraRecipe fromJson(const nlohmann::json& j);
  nlohmann::json toJson() const;
};

}  // namespace crosslab::venues
