#pragma once
// Evaluates a model on the demo's frozen eval set with the local engine: the llama3 chat
// template with the corpus's system prompt, greedy decoding, and a JSON-validity check of
// each output (one JSON object with a string "answer" and a string-array "evidence").
// Outputs are recorded in the lab store's samples table. Compiled into crosslab_engine.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/demo/demo_corpus.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::demo {

struct EvalOutput {
  std::string questionId;
  std::string output;
  bool validJson = false;
};

struct DemoEvalResult {
  std::string model;  // label recorded in samples.model ("demo-base", "demo-lora")
  std::vector<EvalOutput> outputs;
  int valid() const;
  double seconds = 0;
};

struct DemoEvalOptions {
  std::string adapterDir;  // PEFT LoRA merged at load; empty = the base model
  int maxTokens = 96;
  int threads = 0;
  std::function<void(int done, int total)> onProgress;
};

// True when `text` is exactly one JSON object (surrounding whitespace allowed) whose
// "answer" is a string and whose "evidence" is an array of strings.
bool isValidAnswerJson(const std::string& text);

DemoEvalResult evaluateDemoModel(const std::filesystem::path& modelDir, const std::string& label,
                                 const std::vector<QaExample>& eval, const DemoEvalOptions& options);

// One samples row per output (eval_sha256, question_id, model, output, source "demo",
// prompt_template "llama3"); a rerun replaces the model's earlier rows. One transaction.
void recordSamples(store::LabStore& lab, const std::string& evalSha256, const DemoEvalResult& result);

}  // namespace crosslab::demo
