#pragma once
// The local engine behind a torch-free interface: loads a Hugging Face Llama checkpoint
// (and its tokenizer when present), runs forward passes and generates with a KV cache.
// Implemented with libtorch in crosslab_engine (PIMPL keeps torch out of this header).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/infer/sampler.h"
#include "core/model/model_config.h"
#include "core/tokenizer/bpe_tokenizer.h"

namespace crosslab::infer {

struct EngineOptions {
  std::string dtype = "f32";   // f32 | bf16
  std::string device = "cpu";  // any libtorch device string: cpu, cuda, cuda:1 (ROCm builds say cuda)
  int threads = 0;             // 0 = every core
  std::string adapter;         // PEFT LoRA folder merged into the weights at load; empty = none
  bool copyWeights = false;    // read the weights into memory instead of using the file's map
};

struct GenerateOptions {
  int maxTokens = 128;
  SamplingParams sampling;
  std::vector<int32_t> stopIds;          // in addition to the config's EOS ids
  std::vector<std::string> stopStrings;  // matched on the decoded text; not part of the output
  bool ignoreEos = false;
  // Called for every accepted token with the text it completed (may be empty while a
  // UTF-8 sequence is unfinished). Return false to stop.
  std::function<bool(int32_t id, const std::string& text)> onToken;
  const std::atomic<bool>* cancel = nullptr;  // checked between tokens
};

struct GenerateResult {
  std::vector<int32_t> ids;  // completion only
  std::string text;
  int promptTokens = 0;
  std::string finishReason;  // stop | length | cancelled
  double prefillSeconds = 0, decodeSeconds = 0;
  double prefillTokPerS() const;
  double decodeTokPerS() const;  // decode steps after the first token
};

class LocalEngine {
 public:
  // Throws std::runtime_error with a one-line reason.
  static std::unique_ptr<LocalEngine> open(const std::filesystem::path& dir, const EngineOptions& options);
  ~LocalEngine();

  const model::ModelConfig& config() const;
  // The checkpoint's tokenizer.json; nullptr when the folder has none.
  const tokenizer::BpeTokenizer* tokenizer() const;
  // Seconds open() spent on the weights (map, validate, convert/merge) and on tokenizer.json.
  double modelLoadSeconds() const;
  double tokenizerLoadSeconds() const;

  // Logits of every position of `ids` (one sequence): row-major [T, vocab] fp32.
  // incremental: feed one token at a time through the KV cache (the decode path) instead
  // of one causal pass over all of them; both must agree.
  // opByOp (with incremental): the op-by-op decode path instead of the fused CPU step.
  std::vector<float> forwardLogits(const std::vector<int32_t>& ids, bool incremental = false, bool opByOp = false);
  GenerateResult generate(const std::vector<int32_t>& prompt, const GenerateOptions& options);

 private:
  struct Impl;
  explicit LocalEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosslab::infer
