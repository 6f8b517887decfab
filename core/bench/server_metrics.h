#pragma once
// The server's own view of a benchmark, read from its Prometheus /metrics: vLLM's metric
// names (vllm:num_requests_running, vllm:generation_tokens_total, ...), which our server
// serves too (backends/serve/engine_metrics.h) with a few crosslab: counters of its own (the
// decode steps' batch and cost). Two snapshots give what the engine did between them; the
// Benchmarks panel shows that beside the client's figures, so the two instruments can be
// compared (a server that generated more tokens than the client counted; a batch that never
// filled). Qt-free; the scraping is backends/bench/server_metrics_poller.h.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace crosslab::bench {

// One scrape: per metric name (labels dropped), the sum of its samples and how many there were.
struct MetricsSnapshot {
  struct Value {
    double sum = 0;
    int samples = 0;
  };
  std::map<std::string, Value> values;
  // A counter under its name with or without the _total suffix (prometheus_client writes it;
  // older exporters did not); a gauge by its name. Nothing when the scrape lacks it.
  std::optional<double> counter(const std::string& name) const;
  std::optional<double> gauge(const std::string& name) const;  // the sum over label sets
  std::optional<double> mean(const std::string& name) const;   // the mean over label sets
};

// Prometheus's text exposition format (0.0.4): comments and blank lines skipped; each sample
// `name{label="value",...} value [timestamp]`. nullopt with `error` ("line N: ...") for text
// that is not that format (an HTML page, a JSON error, a cut-off line): nothing half-read.
std::optional<MetricsSnapshot> parsePrometheusText(std::string_view text, std::string* error = nullptr);

// What the engine did between two snapshots `seconds` apart (the gauges: at the later one).
// A field is empty where the server does not export it (the crosslab: ones on vLLM).
struct ServerReading {
  double seconds = 0;
  std::optional<double> running, waiting, kvUsage;      // kvUsage: 0..1
  std::optional<double> promptTokens, generatedTokens;  // counted between the snapshots
  std::optional<double> decodeSteps, decodeRows, decodeStepSeconds;
};
ServerReading serverReading(const MetricsSnapshot& before, const MetricsSnapshot& now, double seconds);

// A level's reading in the benchmark's JSON (its "server" key): generated_tokens,
// prompt_tokens, decode_steps, decode_rows_per_step, decode_step_ms, and the gauges after the
// level (running_after, waiting_after, kv_cache_usage_after); null where the server does not say.
nlohmann::json serverReadingToJson(const ServerReading& r);

// A level's stored reading read back: its result JSON's "server" key (serverReadingToJson's) and
// the client's count of output tokens ("total_output_tokens") beside it. The report's table and
// the Benchmarks panel's tooltips both read levels through this.
struct StoredServerCount {
  double generatedTokens = 0;
  std::optional<double> clientOutputTokens;
  std::optional<double> decodeRowsPerStep, decodeStepMs;
  // generated − client; empty when the client's count is not stored
  std::optional<double> serverMinusClient() const {
    return clientOutputTokens ? std::optional<double>(generatedTokens - *clientOutputTokens) : std::nullopt;
  }
};
// nullopt when the level has no reading: no "server" key or no generated_tokens in it (a server
// without /metrics, a sweep recorded before bench read them), or JSON that does not parse.
std::optional<StoredServerCount> storedServerCount(std::string_view levelJson);

// One line for a reading taken while a sweep runs, e.g.
//   "34572 tok/s generated, 31 running, 0 waiting, KV cache 97% in use; decode steps of 31.9
//    rows, 0.85 ms each"
std::string describeLive(const ServerReading& r);
// One line for a whole sweep (first snapshot before its first request, last after it ended),
// with the client's own count of output tokens when known, e.g.
//   "768 tokens generated (the client counted 768), 96 prompt tokens; decode steps of 2.9 rows,
//    0.21 ms each; now 0 running, 0 waiting"
std::string describeSweep(const ServerReading& r, std::optional<long long> clientOutputTokens);

}  // namespace crosslab::bench
