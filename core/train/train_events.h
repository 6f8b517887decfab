#pragma once
// RUN_DIR/events.jsonl: one JSON object per logged step or event, with LLaMA-Factory's
// trainer_log.jsonl keys (current_steps, total_steps, loss, lr, epoch, percentage,
// elapsed_time, remaining_time, throughput, total_tokens, eval_loss) plus "event".

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace crosslab::train {

struct TrainEvent {
  std::string event;  // start | step | eval | checkpoint | error | end
  std::int64_t step = 0, totalSteps = 0;
  std::optional<double> loss, lr, evalLoss;
  double epoch = 0;
  double elapsedSeconds = 0, remainingSeconds = 0;
  double tokensPerSecond = 0;  // input tokens / elapsed seconds
  std::int64_t totalTokens = 0;
  std::string message;  // error text, checkpoint folder, "stopped"
};

// Python's str(timedelta(seconds=int(s))): "0:05:13", "1 day, 2:03:04", "3 days, 0:00:00".
std::string timedeltaText(double seconds);

std::string eventJson(const TrainEvent& e);

// Appends one line per event; each line is flushed to the OS before returning.
class EventLog {
 public:
  // Fresh: truncates the file. Resuming at `keepUpToStep`: drops lines past that step
  // (written after the checkpoint the run resumes from) through temp file + rename.
  static EventLog create(const std::filesystem::path& file);
  static EventLog resumeAt(const std::filesystem::path& file, std::int64_t keepUpToStep);
  void append(const TrainEvent& e) const;
  const std::filesystem::path& path() const { return file_; }

 private:
  explicit EventLog(std::filesystem::path file) : file_(std::move(file)) {}
  std::filesystem::path file_;
};

}  // namespace crosslab::train
