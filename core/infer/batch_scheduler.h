#pragma once
// Continuous batching: one scheduler thread owns the model. Requests join the running batch
// at the next step and leave when done; each running sequence holds one KV-cache row (slot);
// prompts are prefilled in chunks between decode steps so a long prompt stalls the other
// streams for one chunk at most; a cancelled request frees its slot at the next step.
// Runtime LoRA adapters are applied per batch row in the same forward pass.
// Torch-free header (PIMPL); implemented in crosslab_engine.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/infer/serve_request.h"
#include "core/model/model_config.h"
#include "core/tokenizer/bpe_tokenizer.h"

namespace crosslab::infer {

struct SchedulerOptions {
  int maxBatch = 8;        // decoding sequences per step (KV slots)
  int maxModelLen = 0;     // prompt + completion tokens per sequence; 0 = min(config, 4096)
  int prefillChunk = 128;  // prompt tokens per prefill step
  std::string dtype = "f32";
  std::string device = "cpu";
  int threads = 0;  // 0 = every core
  std::vector<std::pair<std::string, std::filesystem::path>> loras;  // runtime adapters by name
  std::filesystem::path mergeAdapter;  // merged into the weights at load; empty = none
  bool copyWeights = false;            // read the weights into memory instead of using the file's map
};

struct SchedulerStats {
  int running = 0;  // sequences holding a slot
  int waiting = 0;
  uint64_t steps = 0;        // decode steps run
  int maxBatchSeen = 0;      // the largest decode batch so far
  uint64_t completed = 0;    // requests finished (any reason)
  uint64_t cancelled = 0;
  int kvSlots = 0;           // KV-cache decode rows (= maxBatch)
  int freeKvSlots = 0;       // rows no sequence holds (kvSlots - decoding sequences)
};

class BatchScheduler {
 public:
  // Loads the model and starts the scheduler thread. Throws std::runtime_error (one line).
  static std::unique_ptr<BatchScheduler> open(const std::filesystem::path& modelDir, const SchedulerOptions& options);
  ~BatchScheduler();  // stops the thread; unfinished requests end as cancelled

  // Queues a request; returns its id. Throws std::invalid_argument for a request that can
  // never run (unknown adapter, empty prompt, prompt + max tokens over the model length).
  uint64_t submit(ServeRequest request);
  void cancel(uint64_t id);  // takes effect at the next step; onDone still runs
  void stop();

  // True while the scheduler thread runs and takes requests; false once it died on an
  // engine error or was stopped (then *why, when given, says which).
  bool healthy(std::string* why = nullptr) const;
  // Testing hook: the scheduler thread's next step throws `error` as an engine failure
  // would, so the thread dies through its real error path (requests fail, health goes 503).
  void failNextStepForTesting(const std::string& error);
  SchedulerStats stats() const;
  const model::ModelConfig& config() const;
  const tokenizer::BpeTokenizer* tokenizer() const;  // nullptr without tokenizer.json
  int maxModelLen() const;
  std::vector<std::string> adapterNames() const;

 private:
  struct Impl;
  explicit BatchScheduler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosslab::infer
