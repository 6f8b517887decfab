#pragma once
// The demo's progress lines on stderr, written and read in one place: `crosslab-cli demo`
// prints them, the GUI's first start turns them into determinate progress per stage.
//
//   demo: PHASE ...                      a phase begins (lab, data, tokenizer, base model,
//   demo: PHASE done in 1.2 s            pretrain, lora, eval base, eval lora) / ends
//   demo: pretrain step 30/300 loss …    pretraining progress
//   demo: lora step 0/111                the LoRA run's size, before its trainer starts
//   demo: eval LABEL 10/30               eval progress (LABEL: demo-base | demo-lora)
//   step 5/111  loss …                   the LoRA trainer's own step line (during "lora")

#include <optional>
#include <string>

namespace crosslab::demo {

// What the first start shows: four stages, each with a determinate count.
enum class DemoStage { Tokenizer, Pretrain, Lora, Eval };
constexpr int kDemoStageCount = 4;

struct DemoProgress {
  std::string phase;  // the demo phase the line belongs to
  enum class Kind { Begin, Step, End } kind = Kind::Step;
  int done = 0, total = 0;  // Step: n of total (within the phase)
};

std::string demoPhaseBeginLine(const std::string& phase);
std::string demoPhaseEndLine(const std::string& phase, double seconds);
std::string demoPretrainLine(int step, int total, double loss, double lr);
std::string demoLoraSizeLine(int totalSteps);
std::string demoEvalLine(const std::string& label, int done, int total);

// Reads one line; `currentPhase` is the phase begun last (the trainer's "step n/T" lines
// count only inside "lora"). nullopt for any other line.
std::optional<DemoProgress> parseDemoProgressLine(const std::string& line, const std::string& currentPhase);

// The stage a phase counts towards; nullopt for "lab" (no stage of its own).
std::optional<DemoStage> demoStageOf(const std::string& phase);

}  // namespace crosslab::demo
