#include "core/venues/lora_recipe.h"

#include <stdexcept>

namespace crosslab::venues {
namespace {

template <typename T>
void read(const nlohmann::json& j, const char* key, T& into) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    into = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("recipe key '") + key + "' has the wrong type");
  }
}

}  // namespace

LoraRecipe LoraRecipe::fromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("a recipe is a JSON object");
  LoraRecipe r;
  read(j, "model", r.model);
  read(j, "dataset", r.dataset);
  read(j, "dataset_file", r.datasetFile);
  read(j, "formatting", r.formatting);
  read(j, "template", r.chatTemplate);
  read(j, "lora_rank", r.rank);
  r.alpha = 2 * r.rank;  // LLaMA-Factory's default when unset
  read(j, "lora_alpha", r.alpha);
  read(j, "lora_dropout", r.dropout);
  read(j, "learning_rate", r.learningRate);
  read(j, "num_train_epochs", r.epochs);
  read(j, "per_device_train_batch_size", r.microBatch);
  read(j, "gradient_accumulation_steps", r.gradAccum);
  read(j, "cutoff_len", r.cutoff);
  read(j, "bf16", r.bf16);
  read(j, "logging_steps", r.loggingSteps);
  read(j, "save_steps", r.saveSteps);
  read(j, "lr_scheduler_type", r.scheduler);
  read(j, "warmup_ratio", r.warmupRatio);
  read(j, "output_dir", r.outputDir);
  read(j, "deepspeed", r.deepspeed);
  read(j, "gpus", r.gpus);
  read(j, "gradient_checkpointing", r.gradientCheckpointing);
  if (r.rank <= 0 || r.microBatch <= 0 || r.gradAccum <= 0 || r.cutoff <= 0 || r.gpus <= 0)
    throw std::invalid_argument("recipe: rank, batch sizes, cutoff_len and gpus must be positive");
  if (r.formatting != "alpaca" && r.formatting != "sharegpt")
    throw std::invalid_argument("recipe: formatting must be alpaca or sharegpt");
  if (r.deepspeed != "none" && r.deepspeed != "z3" && r.deepspeed != "z3_offload")
    throw std::invalid_argument("recipe: deepspeed must be none, z3 or z3_offload");
  return r;
}

nlohmann::json LoraRecipe::toJson() const {
  return {{"model", model}, {"dataset", dataset}, {"dataset_file", datasetFile}, {"formatting", formatting},
          {"template", chatTemplate}, {"lora_rank", rank}, {"lora_alpha", alpha}, {"lora_dropout", dropout},
          {"learning_rate", learningRate}, {"num_train_epochs", epochs}, {"per_device_train_batch_size", microBatch},
          {"gradient_accumulation_steps", gradAccum}, {"cutoff_len", cutoff}, {"bf16", bf16},
          {"logging_steps", loggingSteps}, {"save_steps", saveSteps}, {"lr_scheduler_type", scheduler},
          {"warmup_ratio", warmupRatio}, {"output_dir", outputDir}, {"deepspeed", deepspeed}, {"gpus", gpus},
          {"gradient_checkpointing", gradientCheckpointing}};
}

}  // namespace crosslab::venues
