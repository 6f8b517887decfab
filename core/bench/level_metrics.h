#pragma once
// The metrics of one concurrency level, with vllm/benchmarks/serve.py's definitions
// (calculate_metrics) and result-JSON keys, plus crosslab's own: per-stream decode
// tok/s, $ per million output tokens, the collapse flag, and where token counts came from.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/bench/request_record.h"
#include "core/bench/server_metrics.h"

namespace crosslab::bench {

// mean / median / population std / p99 of a sample in milliseconds (numpy semantics:
// an empty sample gives 0, percentiles interpolate linearly).
struct Summary {
  double meanMs = 0, medianMs = 0, stdMs = 0, p99Ms = 0;
};
Summary summarize(const std::vector<double>& seconds);
// numpy.percentile(values, p) with linear interpolation; values need not be sorted.
double percentile(std::vector<double> values, double p);

struct LevelContext {
  std::string backend = "openai";  // "openai" (completions) or "openai-chat"
  std::string modelId;
  int maxConcurrency = 1;
  std::optional<double> requestRate;  // nullopt = inf
  double burstiness = 1.0;
  std::optional<double> pricePerHour;  // USD per hour of the venue
};

struct LevelResult {
  LevelContext context;
  int numPrompts = 0;
  double durationS = 0;
  int completed = 0, failed = 0;
  std::int64_t totalInputTokens = 0, totalOutputTokens = 0;
  double requestThroughput = 0, outputThroughput = 0, totalTokenThroughput = 0;
  double maxOutputTokensPerS = 0;
  int maxConcurrentRequests = 0;
  Summary ttft, tpot, itl, e2el;
  double perStreamTokS = 0;  // mean over requests of (output_tokens − 1) / (E2EL − TTFT)
  // Whether any request's tokens came in more than one read (E2EL > TTFT). A client that gets
  // no CPU while a short reply streams reads all of it at once: its per-stream rate is then
  // unknown (0 above, null in the JSON), not zero, and no collapse is judged from it.
  // computeLevelMetrics sets it; a level made otherwise (a test's, an import's) counts as measured.
  bool perStreamMeasured = true;
  std::optional<double> usdPerMOutputTokens;
  std::string outputTokensSource;  // "usage", "chunks", "mixed" or "none"
  std::string collapse;            // empty, or what was seen
  // TCP connections the level opened (crosslab's key, -1: not known): with keep-alive, up to the
  // concurrency; a connection per request without it.
  int connectionsOpened = -1;
  // What the server itself counted over the level, from its Prometheus /metrics read before and
  // after it (server_metrics.h; crosslab's key "server", null where the server has none).
  std::optional<ServerReading> server;
  std::vector<RequestRecord> requests;
};

// `records` in issue order; `durationS` from the first issue to the last completion.
LevelResult computeLevelMetrics(const std::vector<RequestRecord>& records, double durationS,
                                const LevelContext& context);

// price_per_hour / (aggregate output tok/s × 3600) × 10⁶; nullopt without a price or output.
std::optional<double> usdPerMillionOutputTokens(std::optional<double> pricePerHour, double outputTokS);

// The vLLM result object plus crosslab's keys. `detailed` adds per-request itls.
nlohmann::json levelToJson(const LevelResult& level, bool detailed = false);

}  // namespace crosslab::bench
