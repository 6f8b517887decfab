#include "core/train/run_monitor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <regex>

namespace crosslab::train {
namespace {

double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Python's json.dumps writes NaN, Infinity and -Infinity bare; quote them so that a
// strict parser accepts the line and numberAt() can turn them back into doubles.
std::string quoteNonFinite(const std::string& line) {
  std::string out;
  out.reserve(line.size() + 8);
  bool inString = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (inString) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) out += line[++i];
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const std::string w = word;
      if (line.compare(i, w.size(), w) == 0) {
        out += '"' + w + '"';
        i += w.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

std::optional<double> numberAt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;  // pre-0.7.1 files write nulls
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

std::optional<std::int64_t> intAt(const nlohmann::json& j, const char* key) {
  auto v = numberAt(j, key);
  // Past int64's range (a step of 1e129) is no step: casting it would be undefined behaviour.
  if (!v || !std::isfinite(*v) || *v >= 9223372036854775808.0 || *v < -9223372036854775808.0) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

std::optional<double> timeAt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) return parseTimedelta(it->get<std::string>());
  return std::nullopt;
}

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

const char* toString(RunState s) {
  switch (s) {
    case RunState::Waiting: return "waiting";
    case RunState::Running: return "running";
    case RunState::Finished: return "finished";
    case RunState::Failed: return "failed";
    case RunState::Stalled: return "stalled";
  }
  return "?";
}

std::optional<double> parseTimedelta(const std::string& text) {
  static const std::regex re(R"(^\s*(?:(-?\d+) days?, )?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) return std::nullopt;
  const double days = m[1].matched ? std::stod(m[1].str()) : 0.0;
  return days * 86400 + std::stod(m[2].str()) * 3600 + std::stod(m[3].str()) * 60 + std::stod(m[4].str());
}

std::optional<StepPoint> parseEventLine(const std::string& line) {
  auto j = nlohmann::json::parse(quoteNonFinite(line), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  StepPoint p;
  p.step = intAt(j, "current_steps");
  if (!p.step) p.step = intAt(j, "step");
  p.totalSteps = intAt(j, "total_steps");
  p.totalTokens = intAt(j, "total_tokens");
  p.loss = numberAt(j, "loss");
  p.lr = numberAt(j, "lr");
  if (!p.lr) p.lr = numberAt(j, "learning_rate");  // LLaMA-Factory before 0.9.1
  p.epoch = numberAt(j, "epoch");
  p.evalLoss = numberAt(j, "eval_loss");
  p.throughput = numberAt(j, "throughput");
  p.elapsedSeconds = timeAt(j, "elapsed_time");
  p.remainingSeconds = timeAt(j, "remaining_time");
  if (j.contains("event") && j["event"].is_string()) p.event = j["event"];
  if (j.contains("message") && j["message"].is_string()) p.message = j["message"];
  return p;
}

RunMonitor::RunMonitor(RunMonitorOptions options, Clock clock)
    : opt_(options), clock_(clock ? std::move(clock) : Clock(steadySeconds)) {
  lastLife_ = clock_();
}

void RunMonitor::remember(const std::string& line) {
  lastLines_.push_back(line);
  while (lastLines_.size() > opt_.keepLines) lastLines_.pop_front();
}

void RunMonitor::life() {
  lastLife_ = clock_();
  if (state_ == RunState::Waiting || state_ == RunState::Stalled) {
    state_ = RunState::Running;
    reason_.clear();
    deadAt_ = -1;
  }
}

void RunMonitor::fail(const std::string& reason) {
  if (state_ == RunState::Failed) return;  // the first cause is the one that matters
  state_ = RunState::Failed;
  reason_ = reason;
  deadAt_ = clock_();
}

void RunMonitor::noteStep(const StepPoint& p) {
  if (p.step && (points_.empty() || !points_.back().step || *points_.back().step != *p.step))
    stepTimes_.push_back(clock_());
  points_.push_back(p);
  if (p.loss && !std::isfinite(*p.loss))
    fail("loss is not finite (" + std::to_string(*p.loss) + ") at step " + std::to_string(p.step.value_or(-1)));
  if (p.event == "end" || p.event == "finished") endSeen_ = true;
  if (p.event == "error") fail("the run reported an error: " + p.message);
  // LLaMA-Factory has no end event: its last line reaches total_steps.
  if (p.event.empty() && p.step && p.totalSteps && *p.totalSteps > 0 && *p.step >= *p.totalSteps) endSeen_ = true;
}

void RunMonitor::feedEventLine(const std::string& line) {
  if (line.empty()) return;
  auto p = parseEventLine(line);
  if (!p) {
    feedOutputLine(line);
    return;
  }
  remember(line);
  if (state_ != RunState::Failed) life();
  noteStep(*p);
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
    if (state_ == RunState::Failed && reason_ == "Python traceback") reason_ = why;
    else fail(why);
    return;
  }
  // The exception line after a traceback names the error: make it the reason.
  if (tracebackOpen_ && looksLikeExceptionLine(line) && reason_.rfind("Python traceback", 0) == 0)
    reason_ = "Python traceback: " + line;
}

void RunMonitor::feedOutputLine(const std::string& line) {
  remember(line);
  if (state_ != RunState::Failed) life();
  scanOutput(line);
}

void RunMonitor::processExited(int status) {
  if (!partial_.empty()) {
    feedOutputLine(partial_);
    partial_.clear();
  }
  if (state_ == RunState::Failed) return;
  if (status == 0 && endSeen_) {
    state_ = RunState::Finished;
    reason_ = "finished";
    return;
  }
  if (status == 137 || status == 128 + 9) fail("killed (SIGKILL, exit 137; often the host's out-of-memory killer)");
  else if (status == 0) fail("exited (status 0) without an end event");
  else if (status < 0) fail("the process is gone and left no exit status");
  else if (status > 128) fail("killed by signal " + std::to_string(status - 128));
  else fail("exited with status " + std::to_string(status));
}

double RunMonitor::stallThreshold() const {
  if (stepTimes_.size() < 2) return std::max(opt_.stallFloorSeconds, opt_.startupGraceSeconds);
  std::vector<double> gaps;
  for (size_t i = 1; i < stepTimes_.size(); ++i) gaps.push_back(stepTimes_[i] - stepTimes_[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return std::max(opt_.stallFloorSeconds, opt_.stallFactor * gaps[gaps.size() / 2]);
}

void RunMonitor::tick() {
  if (state_ != RunState::Running && state_ != RunState::Waiting) return;
  const double quiet = clock_() - lastLife_;
  if (quiet <= stallThreshold()) return;
  state_ = RunState::Stalled;
  deadAt_ = clock_();
  const auto last = lastStep();
  reason_ = "no sign of life for " + std::to_string(static_cast<long long>(quiet)) + " s" +
            (last && last->step ? " (last step " + std::to_string(*last->step) + ")" : " (no step logged yet)");
}

std::optional<StepPoint> RunMonitor::lastStep() const {
  for (auto it = points_.rbegin(); it != points_.rend(); ++it)
    if (it->step) return *it;
  return std::nullopt;
}

double RunMonitor::costWhileDead(double pricePerHour) const {
  if (state_ != RunState::Failed && state_ != RunState::Stalled) return 0;
  return pricePerHour * std::max(0.0, clock_() - lastLife_) / 3600.0;
}

}  // namespace crosslab::train
