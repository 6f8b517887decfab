#pragma once
// The dead-run watchdog. Consumes a training run's event lines (our events.jsonl or
// LLaMA-Factory's trainer_log.jsonl) and its process output, wherever they come from
// (local file, child process, a file tailed over SSH), and decides: running, finished,
// failed (exit without an end event, Traceback, CUDA/ROCm OOM, Killed, NCCL/RCCL
// error, NaN/inf loss) or stalled (no sign of life for too long). Qt-free; the clock
// is injected so stall detection is tested without sleeping.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace crosslab::train {

enum class RunState { Waiting, Running, Finished, Failed, Stalled };
const char* toString(RunState s);

// One parsed event line (a logging step, an eval line, or an event).
struct StepPoint {
  std::optional<std::int64_t> step, totalSteps, totalTokens;
  std::optional<double> loss, lr, epoch, evalLoss, throughput, elapsedSeconds, remainingSeconds;
  std::string event;  // "start", "checkpoint", "error", "end", … (ours); empty for LLaMA-Factory
  std::string message;
};

struct RunMonitorOptions {
  double stallFloorSeconds = 60;     // never call a run stalled sooner than this
  double stallFactor = 4;            // … nor sooner than this × the typical gap between steps
  double startupGraceSeconds = 900;  // before the first step (model loading, compilation)
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

  RunState state() const { return state_; }
  const std::string& reason() const { return reason_; }
  const std::deque<std::string>& lastLines() const { return lastLines_; }
  const std::vector<StepPoint>& points() const { return points_; }
  std::optional<StepPoint> lastStep() const;
  bool endSeen() const { return endSeen_; }
  // Clock time of the last line of any kind.
  double lastSignOfLife() const { return lastLife_; }
  // What the run cost between its last sign of life and now, when it is dead or stalled.
  double costWhileDead(double pricePerHour) const;
  // The stall threshold in force now (seconds).
  double stallThreshold() const;

 private:
  void life();
  void fail(const std::string& reason);
  void remember(const std::string& line);
  void scanOutput(const std::string& line);
  void noteStep(const StepPoint& p);

  RunMonitorOptions opt_;
  Clock clock_;
  RunState state_ = RunState::Waiting;
  std::string reason_;
  std::deque<std::string> lastLines_;
  std::vector<StepPoint> points_;
  std::vector<double> stepTimes_;  // clock time of each new step (for the typical gap)
  std::string partial_;            // output chunk tail without a newline yet
  double lastLife_ = 0;
  double deadAt_ = -1;  // clock time the failure/stall was detected
  bool endSeen_ = false;
  bool tracebackOpen_ = false;
};

// Python's str(timedelta): "5:13:22", "1 day, 2:03:04", "3 days, 0:00:01.500000".
std::optional<double> parseTimedelta(const std::string& text);

// Parses one events/trainer_log line (NaN/Infinity literals accepted); nullopt if not JSON.
std::optional<StepPoint> parseEventLine(const std::string& line);

}  // namespace crosslab::train
