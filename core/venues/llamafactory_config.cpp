#include "core/venues/llamafactory_config.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace crosslab::venues {

nlohmann::json llamaFactoryDatasetInfo(const std::string& name, const std::string& fileName,
                                       const std::string& formatting) {
  nlohmann::json entry = {{"file_name", fileName}, {"formatting", formatting}};
  if (formatting == "alpaca") {
    entry["columns"] = {{"prompt", "instruction"}, {"query", "input"}, {"response", "output"},
                        {"system", "system"}, {"history", "history"}};
  } else if (formatting == "sharegpt") {
    entry["columns"] = {{"messages", "conversations"}, {"system", "system"}, {"tools", "tools"}};
    entry["tags"] = {{"role_tag", "from"}, {"content_tag", "value"}, {"user_tag", "human"}, {"assistant_tag", "gpt"}};
  } else {
    throw std::invalid_argument("formatting must be alpaca or sharegpt, got '" + formatting + "'");
  }
  return {{name, entry}};
}

std::string dataFormatting(const std::string& path, const std::string& declared) {
  if (declared == "alpaca" || declared == "sharegpt") return declared;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  nlohmann::json first;
  const auto all = nlohmann::json::parse(text, nullptr, false);
  if (all.is_array() && !all.empty()) {
    first = all.front();
  } else {  // JSON Lines: the first non-empty line
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos) {
        first = nlohmann::json::parse(line, nullptr, false);
        break;
      }
  }
  if (!first.is_object()) throw std::runtime_error(path + ": not alpaca/sharegpt JSON or JSON Lines");
  return first.contains("conversations") || first.contains("messages") ? "sharegpt" : "alpaca";
}

nlohmann::json deepspeedConfig(int stage, bool offload) {
  if (stage != 2 && stage != 3) throw std::invalid_argument("DeepSpeed ZeRO stage must be 2 or 3");
  nlohmann::json zero;
  if (stage == 3) {
    zero = {{"stage", 3},
            {"overlap_comm", false},
            {"contiguous_gradients", true},
            {"sub_group_size", 1e9},
            {"reduce_bucket_size", "auto"},
            {"stage3_prefetch_bucket_size", "auto"},
            {"stage3_param_persistence_threshold", "auto"},
            {"stage3_max_live_parameters", 1e9},
            {"stage3_max_reuse_distance", 1e9},
            {"stage3_gather_16bit_weights_on_model_save", true}};
    if (offload) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  } else {
    zero = {{"stage", 2},
            {"allgather_partitions", true},
            {"allgather_bucket_size", 5e8},
            {"overlap_comm", false},
            {"reduce_scatter", true},
            {"reduce_bucket_size", 5e8},
            {"contiguous_gradients", true},
            {"round_robin_gradients", true}};
  }
  if (offload) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  return {{"train_batch_size", "auto"},
          {"train_micro_batch_size_per_gpu", "auto"},
          {"gradient_accumulation_steps", "auto"},
          {"gradient_clipping", "auto"},
          {"zero_allow_untested_optimizer", true},
          {"fp16",
           {{"enabled", "auto"}, {"loss_scale", 0}, {"loss_scale_window", 1000}, {"initial_scale_power", 16},
            {"hysteresis", 2}, {"min_loss_scale", 1}}},
          {"bf16", {{"enabled", "auto"}}},
          {"zero_optimization", zero}};
}

}  // namespace crosslab::venues
