#include "backends/serve/engine_stats_log.h"

#include <algorithm>
#include <cstdio>

namespace crosslab::serve {

std::string engineStatsLine(const infer::SchedulerStats& before, const infer::SchedulerStats& now, double seconds) {
  // Counters only grow; a later snapshot below an earlier one (never, but) reads as zero.
  const auto delta = [](uint64_t a, uint64_t b) { return b > a ? b - a : uint64_t(0); };
  const uint64_t prompt = delta(before.promptTokens, now.promptTokens);
  const uint64_t generated = delta(before.generatedTokens, now.generatedTokens);
  const uint64_t steps = delta(before.steps, now.steps);
  const uint64_t rows = delta(before.decodeRows, now.decodeRows);
  if (prompt == 0 && generated == 0 && steps == 0 && now.running == 0 && now.waiting == 0) return {};
  const double s = std::max(seconds, 1e-9);
  const double stepS = std::max(0.0, (now.decodeS + now.lmHeadS) - (before.decodeS + before.lmHeadS));
  char line[512];
  std::snprintf(line, sizeof line,
                "engine: prompt %.1f tok/s, generation %.1f tok/s (last %.1f s: %llu prompt tokens, %llu generated); "
                "running %d, waiting %d; KV rows %d of %d in use",
                double(prompt) / s, double(generated) / s, seconds, static_cast<unsigned long long>(prompt),
                static_cast<unsigned long long>(generated), now.running, now.waiting, now.kvSlots - now.freeKvSlots,
                now.kvSlots);
  std::string out = line;
  if (steps > 0) {
    std::snprintf(line, sizeof line, "; %llu decode steps, %.1f rows and %.2f ms each",
                  static_cast<unsigned long long>(steps), double(rows) / double(steps), 1e3 * stepS / double(steps));
    out += line;
  }
  // Where the scheduler thread's time went, as shares of the interval: decode steps (forward and
  // LM head), prefill, sampling, handing tokens on (detokenizing, to the streams' writer).
  const auto share = [&](double a, double b) { return 100.0 * std::max(0.0, b - a) / s; };
  std::snprintf(line, sizeof line, "; engine thread: decode %.0f%%, prefill %.0f%%, sampling %.0f%%, emitting %.0f%%",
                share(before.decodeS + before.lmHeadS, now.decodeS + now.lmHeadS), share(before.prefillS, now.prefillS),
                share(before.sampleS, now.sampleS), share(before.emitS, now.emitS));
  out += line;
  return out;
}

EngineStatsLog::EngineStatsLog(const infer::BatchScheduler& engine, std::chrono::milliseconds interval,
                               std::function<void(const std::string&)> say)
    : engine_(engine), interval_(interval), say_(std::move(say)) {
  if (interval_.count() > 0) thread_ = std::thread([this] { loop(); });
}

EngineStatsLog::~EngineStatsLog() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineStatsLog::loop() {
  using Clock = std::chrono::steady_clock;
  infer::SchedulerStats last = engine_.stats();
  Clock::time_point at = Clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, interval_, [this] { return stopping_; })) {
    lk.unlock();
    const infer::SchedulerStats now = engine_.stats();
    const Clock::time_point t = Clock::now();
    const std::string line = engineStatsLine(last, now, std::chrono::duration<double>(t - at).count());
    if (!line.empty()) say_(line);
    last = now;
    at = t;
    lk.lock();
  }
}

}  // namespace crosslab::serve
