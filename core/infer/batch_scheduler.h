#pragma once
// Continuous batching: one scheduler thread owns the model. Requests join the running batch
// at the next step and leave when done; each running sequence holds one KV-cache row (slot);
// new requests are prefilled several at a time (one padded forward), in chunks between decode
// steps, so a long prompt stalls the other streams for one chunk at most; a cancelled request
// frees its slot at the next step. Runtime LoRA adapters are applied per batch row in the same
// forward pass. Each decode step runs the fused CPU step or the op-by-op path, whichever the
// scheduler measured faster for that batch size (core/infer/decode_path_chooser.h).
// Torch-free header (PIMPL); implemented in crosslab_engine.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
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
  int prefillChunk = 128;  // prompt tokens per prefill step (all prefilling requests together)
  // Requests prefilled together at most (KV rows beside the maxBatch slots; on the CPU resident
  // only once a prompt is written there). Each prefill step reads every weight once, so a burst
  // of short prompts is cheaper in few wide steps than in many narrow ones: `small` in bf16, 32
  // requests of 5 tokens at once (bench/batch_bench --prefill-batch), 4 → 16 took the prefill
  // from 11-12% of the run to 7%, the output tok/s 1 654-1 782 → 2 051-2 056 and TTFT p99
  // 220-225 → 78-82 ms. The prefillChunk budget still bounds the positions of one step.
  int prefillBatch = 16;
  // Prefill chunks of at most this many positions per row run as fused decode steps, one
  // position at a time, on a model whose layers' weights stay in cache (up to 8 MB); 0 = never.
  int stepwisePrefill = 32;
  std::string decodePath = "auto";  // auto (the fastest per batch size) | fused | fused-split | op-by-op
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
  uint64_t decodeRows = 0;   // rows those steps decoded (steps x their batch sizes)
  uint64_t promptTokens = 0;     // prompt positions prefilled
  uint64_t generatedTokens = 0;  // tokens added to completions (a stop token that ends one is not)
  int maxBatchSeen = 0;      // the largest decode batch so far
  uint64_t completed = 0;    // requests finished (any reason)
  uint64_t cancelled = 0;
  int kvSlots = 0;           // KV-cache decode rows (= maxBatch)
  int freeKvSlots = 0;       // rows no sequence holds (kvSlots - decoding sequences)
  // The cache as allocated: rows (decode + prefill), positions per row, bytes. On the CPU only
  // what sequences write becomes resident (core/model/huge_pages.h).
  int kvCacheRows = 0;
  int64_t kvCachePositions = 0;
  uint64_t kvCacheBytes = 0;
  uint64_t fusedSteps = 0, opByOpSteps = 0;  // decode steps by path
  uint64_t splitSteps = 0;                    // of the fused steps, those with rows split over threads
  uint64_t fusedRows = 0;                     // rows decoded through fused steps
  uint64_t prefillSteps = 0;
  uint64_t fusedPrefillSteps = 0;  // of the prefill steps, those run as fused steps, one position at a time
  int maxPrefillBatchSeen = 0;
  std::string decodePaths;  // the measured choice per batch size, e.g. "1:fused 8:fused"
  // Seconds the scheduler thread spent, summed over its life (where the time goes):
  double prefillS = 0;   // prefill forwards, with their LM head
  double decodeS = 0;    // decode forwards up to the last norm, every path
  double lmHeadS = 0;    // the decode steps' LM head
  double sampleS = 0;    // choosing each row's next token
  double emitS = 0;      // detokenizing and handing tokens to the caller (onToken: the server)
  // Inside decodeS, fused steps only: projections, runtime LoRA, attention, the rest.
  double fusedMatmulS = 0, fusedLoraS = 0, fusedAttentionS = 0, fusedOtherS = 0;
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
  // Runs on the scheduler thread after every step, once that step's tokens went to their
  // requests' onToken: a server hands a step's tokens on with one wake instead of one per
  // token. Empty = none. Any thread, any time; a step already under way may use the old one.
  void setAfterStep(std::function<void()> hook);

  // True while the scheduler thread runs and takes requests; false once it died on an
  // engine error or was stopped (then *why, when given, says which).
  bool healthy(std::string* why = nullptr) const;
  // Testing hook: the scheduler thread's next step throws `error` as an engine failure
  // would, so the thread dies through its real error path (requests fail, health goes 503).
  void failNextStepForTesting(const std::string& error);
  // Testing hook: while held, the scheduler thread takes no step (requests queue up), so a
  // test can hand it several requests at once.
  void holdForTesting(bool held);
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
