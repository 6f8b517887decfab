#pragma once
// adapter_config.json of a PEFT LoRA adapter as typed values: the one reader of it, for
// the engine (merge, runtime LoRA) and for the venues (vLLM's --max-lora-rank).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace crosslab::model {

struct AdapterConfig {
  int64_t rank = 0;       // "r", > 0
  double alpha = 0;       // "lora_alpha"
  bool rslora = false;    // "use_rslora": scaling alpha / sqrt(r)
  std::vector<std::string> targetModules;  // "target_modules" (a list, or one name / regex)
  std::string baseModel;  // "base_model_name_or_path", may be empty
  double scaling() const;  // lora_alpha / r, or lora_alpha / sqrt(r) with rsLoRA
};

// Throws std::runtime_error "adapter_config.json: …" for anything the engine cannot apply
// as PEFT meant it: not JSON, no integer r > 0 or numeric lora_alpha, another peft_type,
// DoRA, trained biases.
AdapterConfig parseAdapterConfig(const std::string& jsonText);
// DIR/adapter_config.json; errors name the file.
AdapterConfig loadAdapterConfig(const std::filesystem::path& adapterDir);

}  // namespace crosslab::model
