#pragma once
// One line of a run's event log, typed: a logging step, an eval result, or an event
// (start, checkpoint, error, end). The same record whichever way the line came (our
// events.jsonl or LLaMA-Factory's trainer_log.jsonl; a local file, a child process, a
// file tailed over SSH) and whoever reads it (the watchdog, the lab store, the chart).

#include <cstdint>
#include <optional>
#include <string>

namespace crosslab::train {

struct StepRecord {
  std::optional<std::int64_t> step, totalSteps, totalTokens;
  std::optional<double> loss, lr, epoch, evalLoss, throughput, elapsedSeconds, remainingSeconds;
  std::string event;  // "start", "step", "eval", "checkpoint", "error", "end" (ours); empty for LLaMA-Factory
  std::string message;

  // A line that moves the run forward: a new optimizer step's loss, an eval result, or
  // one of our own progress events. (Output lines and repeated lines are not progress.)
  bool isEval() const { return evalLoss.has_value(); }
};

// Python's str(timedelta): "5:13:22", "1 day, 2:03:04", "3 days, 0:00:01.500000".
std::optional<double> parseTimedelta(const std::string& text);

// Parses one events/trainer_log line (NaN/Infinity literals accepted; `learning_rate`
// read as `lr`, `step` as `current_steps`); nullopt if the line is not a JSON object.
std::optional<StepRecord> parseEventLine(const std::string& line);

}  // namespace crosslab::train
