#pragma once
// A concurrency sweep against one OpenAI-compatible endpoint: optional warm-up, then one
// level per concurrency (vLLM bench serve semantics per level), watched live for decode
// collapse and stalled streams (the sweep stops before wasting the meter), and the
// saturation knee over the levels that ran.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "backends/bench/stream_client.h"
#include "core/bench/level_metrics.h"
#include "core/bench/sweep_analysis.h"

namespace crosslab::backends {

struct SweepOptions {
  std::string url, model, endpoint = "completions";  // endpoint: completions | chat
  std::vector<int> levels = {1, 8, 32, 64};
  std::optional<int> numPrompts;    // per level; default max(8, 2 × concurrency)
  std::optional<double> durationS;  // per level, instead of a count
  int inputLen = 128, outputLen = 512;
  bool ignoreEos = false;
  std::optional<double> rate;  // nullopt = inf
  double burstiness = 1.0;
  int warmup = 0;
  std::optional<double> pricePerHour;
  std::string authorization;  // "Bearer …" (from --api-key-env), never stored or logged
  double collapseFraction = 0.1;  // per stream under this × the first level's, no faster together:
                                  // a collapse (sweep_analysis.h)
  double watchWindowS = 5.0;      // live per-stream rate is measured over this window
  double stallS = 30.0;           // a decoding stream silent this long = streams stopped
  double timeoutS = 120.0;        // per request: connect, first byte, and between bytes
  bool keepAlive = true;          // reuse connections between requests (ClientConfig::keepAlive)
  // Read the server's Prometheus /metrics before and after each level (LevelResult::server); a
  // server that has none is asked once.
  bool serverMetrics = true;
  std::uint64_t seed = 0;
};

class SweepListener {
 public:
  virtual ~SweepListener() = default;
  virtual void onLevelStart(int concurrency, int planned) = 0;
  // About 10 times a second: output tok/s over the last second, and per decoding stream.
  virtual void onTick(int concurrency, const LiveTick& tick, double aggregateTokS, double perStreamTokS) = 0;
  virtual void onRequestDone(int concurrency, const bench::RequestRecord& record) = 0;
  virtual void onLevelDone(const bench::LevelResult& level) = 0;
};

struct SweepResult {
  std::vector<bench::LevelResult> levels;
  std::optional<bench::Knee> knee;
  std::string stoppedReason;  // collapse, stall, failure, or the user; empty when all levels ran
  std::string failure;        // a level in which no request completed: why (the sweep stops there)
  std::string serverMetrics;  // why the levels carry no server reading ("HTTP 404", …); empty: they do
};

class ThroughputSweep {
 public:
  // Validates the options; throws std::invalid_argument with a one-line reason.
  explicit ThroughputSweep(SweepOptions options);

  SweepResult run(SweepListener* listener, const std::atomic<bool>* stop);
  // The JSON body of request `index` (prompt of inputLen words, streamed, usage asked for).
  std::string requestBody(int index) const;
  const SweepOptions& options() const { return options_; }

 private:
  LevelPlan planFor(int concurrency, int count, std::uint64_t seed) const;
  void warmUp(StreamClient& client, const std::atomic<bool>* stop);

  SweepOptions options_;
};

}  // namespace crosslab::backends
