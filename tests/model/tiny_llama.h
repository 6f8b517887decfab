#pragma once
// Writes tiny random Llama checkpoints (config.json + model.safetensors, through our own
// writer) for the engine tests. Weights are scaled so activations stay O(1) and logits
// have clear top-1 margins, which keeps greedy comparisons meaningful.

#include <cstdint>
#include <string>

namespace crosslab::testing {

struct TinyLlamaSpec {
  int64_t hidden = 64;
  int64_t intermediate = 96;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kvHeads = 4;  // GQA ratio = heads / kvHeads
  int64_t vocab = 512;
  bool tied = false;
  bool attentionBias = false;
  bool llama3Rope = true;
  bool bf16 = false;  // store weights as BF16
  uint32_t seed = 1;
};

// Returns the config.json text it wrote.
std::string writeTinyLlama(const std::string& dir, const TinyLlamaSpec& spec);

// A PEFT LoRA adapter for a checkpoint of `spec`: every linear layer of every block,
// non-zero A [r, in] and B [out, r] (F32), adapter_config.json with r / lora_alpha.
void writeTinyLora(const std::string& dir, const TinyLlamaSpec& spec, int r, double alpha, bool rslora, uint32_t seed);

}  // namespace crosslab::testing
