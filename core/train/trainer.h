#pragma once
// The LoRA SFT trainer: AdamW (fp32 state), gradient accumulation, clipping, warmup +
// linear/cosine/constant schedule, loss = mean over trained tokens of the effective batch
// (HF causal shift), LM head only at trained positions, a seed-fixed data order, optional
// eval loss, events.jsonl, atomic checkpoints and exact resume. Torch-free header.
//
// Data order: epoch e visits the examples in a permutation drawn from (seed, e); optimizer
// step s of the run takes the slice [k·E, (k+1)·E) of epoch s / stepsPerEpoch's order
// (k = s mod stepsPerEpoch, E = effective batch). The data position is therefore the step.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/train/recipe.h"
#include "core/train/sft_data.h"
#include "core/train/train_events.h"

namespace crosslab::model {
class LlamaModel;
}

namespace crosslab::train {

struct TrainerOptions {
  std::filesystem::path runDir;      // events.jsonl, checkpoint-N/, final adapter; empty: no files
  std::string baseModel;             // adapter_config.json base_model_name_or_path
  bool resume = false;               // continue from the newest complete checkpoint in runDir
  std::function<void(const TrainEvent&)> onEvent;  // every event written (and more: none)
  const std::atomic<bool>* stop = nullptr;          // set -> checkpoint at the current step, return
};

// Wall seconds per phase of the optimizer steps (CPU ops are synchronous; on a GPU these
// are enqueue times). For the benchmark program.
struct TrainPhaseSeconds {
  double body = 0;       // embedding + decoder layers, forward
  double head = 0;       // LM head + log-softmax + NLL at trained positions, forward and its backward
  double backward = 0;   // the decoder layers (autograd)
  double optimizer = 0;  // clipping + AdamW
};

struct TrainResult {
  std::int64_t steps = 0;        // optimizer steps done (global_step)
  std::int64_t totalSteps = 0;
  std::int64_t resumedFrom = 0;  // 0 for a fresh run
  bool stopped = false;
  std::optional<double> lastLoss;
  TrainPhaseSeconds phases;
};

class Trainer {
 public:
  // `model` must outlive the trainer; its projection hook is set to the LoRA adapter.
  // The model's dtype is the compute dtype (load it bf16 for the recipe's bf16).
  Trainer(model::LlamaModel& model, Recipe recipe, std::vector<EncodedExample> train,
          std::vector<EncodedExample> eval, TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  std::int64_t totalSteps() const;
  TrainResult run();
  // The adapter as it is now (PEFT layout): before run() it is the initial A/B.
  void saveAdapter(const std::filesystem::path& dir) const;
  // Loss over `examples` with the current adapter (no gradients, no dropout).
  double evalLoss(const std::vector<EncodedExample>& examples) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The newest checkpoint-N folder of runDir holding trainer_state.json; 0 and an empty path
// when none.
std::pair<std::int64_t, std::filesystem::path> newestCheckpoint(const std::filesystem::path& runDir);

}  // namespace crosslab::train
