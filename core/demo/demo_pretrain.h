#pragma once
// A brief full-parameter pretraining pass for the demo base model: next-token loss on the
// corpus text (contexts, questions, answers as plain text) so that the model knows the
// domain's words before LoRA adapts it. A small self-contained loop: every weight trainable,
// AdamW written out (HF defaults except the learning rate), warmup + cosine schedule,
// global-norm clipping. Deterministic for a seed and thread count. Torch stays in the .cpp
// (crosslab_engine).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace crosslab::demo {

struct PretrainProgress {
  int step = 0, totalSteps = 0;
  double loss = 0, lr = 0, elapsedSeconds = 0;
  int64_t tokens = 0;  // trained so far
};

struct PretrainOptions {
  int steps = 300;
  int batch = 8;     // sequences per step
  int seqLen = 128;  // tokens per sequence (windows of the packed token stream)
  double learningRate = 3e-3;
  double warmupRatio = 0.05;
  double maxGradNorm = 1.0;
  uint64_t seed = 17;
  int threads = 0;  // 0 = every core
  std::function<void(const PretrainProgress&)> onProgress;  // after every step
};

struct PretrainResult {
  int steps = 0;
  double firstLoss = 0, lastLoss = 0;  // lastLoss = mean of the last 10% of steps
  int64_t tokens = 0, corpusTokens = 0;
  double seconds = 0;
};

// Loads DIR (config.json, model.safetensors, tokenizer.json), trains on `texts` (each
// encoded as <|begin_of_text|> text <|end_of_text|>, packed into one stream) and rewrites
// DIR/model.safetensors atomically. Throws std::runtime_error with a one-line reason.
PretrainResult pretrainDemoModel(const std::filesystem::path& dir, const std::vector<std::string>& texts,
                                 const PretrainOptions& options);

}  // namespace crosslab::demo
