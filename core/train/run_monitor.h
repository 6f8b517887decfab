#pragma once
// The dead-run watchdog. Consumes a training run's event lines (our events.jsonl or
// LLaMA-Factory's trainer_log.jsonl) and its process output, wherever they come from
// (local file, child process, a file tailed over SSH), and decides: running, finished,
// failed (exit without an end event, Traceback, CUDA/ROCm OOM, Killed, NCCL/RCCL
// error, NaN/inf loss) or stalled.
//
// Stalled is judged on progress, not on output: a run that prints a warning every second
// while no new step arrives (a hung collective, a stuck data loader) is as dead as a
// silent one. Once steps flow, no new step for max(floor, factor × the run's own median
// step gap) is a stall; before the first step the allowance is longer (models load, data
// is tokenized). Qt-free; the clock is injected so stalls are tested without sleeping.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/train/run_status.h"
#include "core/train/step_record.h"

namespace crosslab::train {

struct RunMonitorOptions {
  double stallFloorSeconds = 60;     // never call a run stalled sooner than this after progress
  double stallFactor = 4;            // … nor sooner than this × the run's median step gap
  double startupGraceSeconds = 900;  // before the first step (model loading, tokenizing)
  std::size_t keepLines = 40;        // last output/event lines kept for the report
};

class RunMonitor {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  explicit RunMonitor(RunMonitorOptions options = {}, Clock clock = {});

  // Parses a JSON line; a line that is not JSON counts as output.
  void feedEventLine(const std::string& line);
  // A chunk of process output (stdout or stderr); split into lines internally.
  void feedOutput(const std::string& chunk);
  void feedOutputLine(const std::string& line);
  // The process ended with `status` (-1 when unknown; 128+N for signal N).
  void processExited(int status);
  // Checks for a stall at the clock's current time.
  void tick();

  // Pending until the first line, then running, stalled, finished, failed, or stopped
  // (our trainer's end event after SIGTERM: a clean stop with a checkpoint).
  RunStatus status() const { return status_; }
  const std::string& reason() const { return reason_; }
  const std::deque<std::string>& lastLines() const { return lastLines_; }
  const std::vector<StepRecord>& records() const { return records_; }
  std::optional<StepRecord> lastStep() const;
  bool endSeen() const { return endSeen_; }
  // Clock time of the last progress (a new step, an eval, one of our events), or of the
  // start when there was none yet.
  double lastProgress() const { return lastProgress_; }
  double secondsSinceProgress() const { return clock_() - lastProgress_; }
  // Median seconds between new steps; nullopt before two steps.
  std::optional<double> typicalStepSeconds() const;
  // What the run cost from its last progress until now, when it is dead or stalled.
  double costWhileDead(double pricePerHour) const;
  // The stall threshold in force now (seconds).
  double stallThreshold() const;

 private:
  void alive();
  void progress();
  void fail(const std::string& reason);
  void remember(const std::string& line);
  void scanOutput(const std::string& line);
  void noteRecord(const StepRecord& r);
  std::string lastLinesText(std::size_t n) const;

  RunMonitorOptions opt_;
  Clock clock_;
  RunStatus status_ = RunStatus::Pending;
  std::string reason_;
  std::deque<std::string> lastLines_;
  std::vector<StepRecord> records_;
  std::vector<double> stepTimes_;  // clock time of each new step (for the typical gap)
  std::optional<std::int64_t> lastStepNo_;
  std::string partial_;            // output chunk tail without a newline yet
  double lastProgress_ = 0;
  bool endSeen_ = false;
  bool stoppedSeen_ = false;
  bool tracebackOpen_ = false;
};

}  // namespace crosslab::train
