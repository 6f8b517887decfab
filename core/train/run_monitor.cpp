#include "core/train/run_monitor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>

namespace crosslab::train {
namespace {

double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds(double s) { return std::to_string(static_cast<long long>(std::max(0.0, s))) + " s"; }

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// A failure signature in one output line, or empty.
std::string failureIn(const std::string& line) {
  static const std::regex oom(R"((CUDA|HIP) out of memory|OutOfMemoryError|hipErrorOutOfMemory|cudaErrorMemoryAllocation)");
  static const std::regex collective(R"((NCCL|RCCL) (error|Error|ERROR)|nccl(Internal|System|Unhandled\w*|Remote|Invalid\w*)Error|Watchdog caught collective operation timeout)");
  static const std::regex nanLoss(R"('loss': '?(nan|inf|-inf)'?)");
  std::smatch m;
  if (std::regex_search(line, m, oom)) {
    const std::string stack = contains(line, "HIP") || contains(line, "hip") ? "ROCm" : "CUDA";
    return "GPU out of memory (" + stack + "): " + line;
  }
  if (std::regex_search(line, collective)) return "collective communication failed (NCCL/RCCL): " + line;
  if (std::regex_search(line, nanLoss)) return "loss is not finite: " + line;
  if (line == "Killed" || contains(line, "Killed process") || contains(line, ": Killed"))
    return "killed (SIGKILL; often the host's out-of-memory killer)";
  return {};
}

bool looksLikeExceptionLine(const std::string& line) {
  static const std::regex exc(R"(^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)");
  return std::regex_match(line, exc);
}

}  // namespace

RunMonitor::RunMonitor(RunMonitorOptions options, Clock clock)
    : opt_(options), clock_(clock ? std::move(clock) : Clock(steadySeconds)) {
  lastProgress_ = clock_();
}

void RunMonitor::remember(const std::string& line) {
  lastLines_.push_back(line);
  while (lastLines_.size() > opt_.keepLines) lastLines_.pop_front();
}

std::string RunMonitor::lastLinesText(std::size_t n) const {
  std::string out;
  const std::size_t from = lastLines_.size() > n ? lastLines_.size() - n : 0;
  for (std::size_t i = from; i < lastLines_.size(); ++i) {
    std::string line = lastLines_[i];
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    out += (out.empty() ? "" : " | ") + line;
  }
  return out;
}

// Any line: the process exists and talks. Not progress.
void RunMonitor::alive() {
  if (status_ == RunStatus::Pending) status_ = RunStatus::Running;
}

// A new step, an eval, or one of our progress events: the stall clock starts again.
void RunMonitor::progress() {
  lastProgress_ = clock_();
  if (status_ == RunStatus::Pending || status_ == RunStatus::Stalled) {
    status_ = RunStatus::Running;
    reason_.clear();
  }
}

void RunMonitor::fail(const std::string& reason) {
  if (status_ == RunStatus::Failed) return;  // the first cause is the one that matters
  status_ = RunStatus::Failed;
  reason_ = reason;
}

void RunMonitor::noteRecord(const StepRecord& r) {
  records_.push_back(r);
  const bool newStep = r.step && r.loss && (!lastStepNo_ || *r.step > *lastStepNo_);
  if (newStep) {
    lastStepNo_ = r.step;
    stepTimes_.push_back(clock_());
  }
  const bool ourEvent = r.event == "start" || r.event == "checkpoint" || r.event == "end" || r.event == "finished";
  if (status_ != RunStatus::Failed && (newStep || r.isEval() || ourEvent)) progress();
  if (r.loss && !std::isfinite(*r.loss))
    fail("loss is not finite (" + std::to_string(*r.loss) + ") at step " + std::to_string(r.step.value_or(-1)));
  if (r.event == "end" || r.event == "finished") endSeen_ = true;
  if (r.event == "end" && r.message == "stopped") stoppedSeen_ = true;  // ours, after SIGTERM
  if (r.event == "error") fail("the run reported an error: " + r.message);
  // LLaMA-Factory has no end event: its last line reaches total_steps.
  if (r.event.empty() && r.step && r.totalSteps && *r.totalSteps > 0 && *r.step >= *r.totalSteps) endSeen_ = true;
}

void RunMonitor::feedEventLine(const std::string& line) {
  if (line.empty()) return;
  auto r = parseEventLine(line);
  if (!r) {
    feedOutputLine(line);
    return;
  }
  remember(line);
  if (status_ != RunStatus::Failed) alive();
  noteRecord(*r);
}

void RunMonitor::feedOutput(const std::string& chunk) {
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find_first_of("\r\n", start)) != std::string::npos; start = nl + 1)
    if (nl > start) feedOutputLine(partial_.substr(start, nl - start));
  partial_.erase(0, start);
}

void RunMonitor::scanOutput(const std::string& line) {
  if (contains(line, "Traceback (most recent call last)")) {
    tracebackOpen_ = true;
    fail("Python traceback");
    return;
  }
  const std::string why = failureIn(line);
  if (!why.empty()) {
    // A traceback's own last line (e.g. "torch.OutOfMemoryError: HIP out of memory")
    // names the cause better than "Python traceback".
    if (status_ == RunStatus::Failed && reason_ == "Python traceback") reason_ = why;
    else fail(why);
    return;
  }
  // The exception line after a traceback names the error: make it the reason.
  if (tracebackOpen_ && looksLikeExceptionLine(line) && reason_.rfind("Python traceback", 0) == 0)
    reason_ = "Python traceback: " + line;
}

void RunMonitor::feedOutputLine(const std::string& line) {
  remember(line);
  if (status_ != RunStatus::Failed) alive();  // talking is not progress: the stall clock runs on
  scanOutput(line);
}

void RunMonitor::processExited(int status) {
  if (!partial_.empty()) {
    feedOutputLine(partial_);
    partial_.clear();
  }
  if (status_ == RunStatus::Failed) return;
  if (status == 0 && endSeen_) {
    status_ = stoppedSeen_ ? RunStatus::Stopped : RunStatus::Finished;
    reason_ = stoppedSeen_ ? "stopped at step " + std::to_string(lastStepNo_.value_or(0)) + " (checkpoint written)" : "finished";
    return;
  }
  std::string why;
  if (status == 137 || status == 128 + 9) why = "killed (SIGKILL, exit 137; often the host's out-of-memory killer)";
  else if (status == 0) why = "exited (status 0) without an end event";
  else if (status < 0) why = "the process is gone and left no exit status";
  else if (status > 128) why = "killed by signal " + std::to_string(status - 128);
  else why = "exited with status " + std::to_string(status);
  // A CLI's one-line error ("error: …") is its last line and says why.
  if (status > 0 && status < 128 && !lastLines_.empty() && lastLines_.back().rfind("error: ", 0) == 0)
    why += ": " + lastLines_.back();
  fail(why);
}

std::optional<double> RunMonitor::typicalStepSeconds() const {
  if (stepTimes_.size() < 2) return std::nullopt;
  std::vector<double> gaps;
  for (size_t i = 1; i < stepTimes_.size(); ++i) gaps.push_back(stepTimes_[i] - stepTimes_[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

double RunMonitor::stallThreshold() const {
  if (stepTimes_.empty()) return std::max(opt_.stallFloorSeconds, opt_.startupGraceSeconds);
  const auto typical = typicalStepSeconds();
  return std::max(opt_.stallFloorSeconds, typical ? opt_.stallFactor * *typical : 0.0);
}

void RunMonitor::tick() {
  if (status_ != RunStatus::Running && status_ != RunStatus::Pending) return;
  const double quiet = secondsSinceProgress();
  if (quiet <= stallThreshold()) return;
  status_ = RunStatus::Stalled;
  const auto last = lastStep();
  if (!last) {
    reason_ = "no step logged " + seconds(quiet) + " after the start (allowance " + seconds(stallThreshold()) + ")";
  } else {
    reason_ = "no new step for " + seconds(quiet) + ": last step " + std::to_string(*last->step) +
              (last->totalSteps ? " of " + std::to_string(*last->totalSteps) : std::string()) + ", " + seconds(quiet) +
              " ago";
    if (const auto typical = typicalStepSeconds()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f s", *typical);
      reason_ += std::string(" (steps took ~") + buf + ")";
    }
  }
  const std::string lines = lastLinesText(3);
  if (!lines.empty()) reason_ += "; last lines: " + lines;
}

std::optional<StepRecord> RunMonitor::lastStep() const {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it)
    if (it->step && (it->loss || it->evalLoss || it->event.empty())) return *it;
  return std::nullopt;
}

double RunMonitor::costWhileDead(double pricePerHour) const {
  if (status_ != RunStatus::Failed && status_ != RunStatus::Stalled) return 0;
  return pricePerHour * std::max(0.0, secondsSinceProgress()) / 3600.0;
}

}  // namespace crosslab::train
