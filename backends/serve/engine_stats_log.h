#pragma once
// The server's periodic line on its engine, as vLLM's server logs one every 10 s
// (LoggingStatLogger: prompt and generation throughput, running and waiting requests, KV cache
// usage): what a user watching a benchmark from the server's side wants to see, the batch the
// steps actually ran and what a step cost. `crosslab-cli serve` prints it on stderr
// (--log-stats-interval, --disable-log-stats).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/infer/batch_scheduler.h"

namespace crosslab::serve {

// One line on what the engine did between two snapshots of its counters taken `seconds`
// apart; empty when it did nothing and holds no request (an idle server stays quiet). E.g.
//   engine: prompt 12.0 tok/s, generation 1600.5 tok/s (last 10.0 s: 120 prompt tokens,
//   16005 generated); running 32, waiting 0; KV rows 32 of 32 in use; 512 decode steps,
//   31.3 rows and 0.58 ms each
// (one line; "ms each": a decode step's forward and LM head, not sampling nor the HTTP side).
std::string engineStatsLine(const infer::SchedulerStats& before, const infer::SchedulerStats& now, double seconds);

// A thread that every `interval` hands engineStatsLine (when not empty) to `say`. It reads only
// the engine's counters (BatchScheduler::stats, a copy under the scheduler's lock). Stops,
// without a last line, when destroyed. interval <= 0: no thread.
class EngineStatsLog {
 public:
  EngineStatsLog(const infer::BatchScheduler& engine, std::chrono::milliseconds interval,
                 std::function<void(const std::string&)> say);
  ~EngineStatsLog();
  EngineStatsLog(const EngineStatsLog&) = delete;
  EngineStatsLog& operator=(const EngineStatsLog&) = delete;

 private:
  void loop();
  const infer::BatchScheduler& engine_;
  const std::chrono::milliseconds interval_;
  const std::function<void(const std::string&)> say_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace crosslab::serve
