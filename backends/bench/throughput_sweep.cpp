#include "backends/bench/throughput_sweep.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/bench/endpoint_url.h"
#include "core/bench/server_metrics.h"

namespace crosslab::backends {

namespace {

// Common English words that Llama-3-style BPE encodes as one token each (with the
// leading space), so inputLen words ≈ inputLen prompt tokens when usage is absent.
const char* const kWords[] = {"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with",
                              "be", "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which",
                              "but", "have", "an", "had", "they", "you", "were", "their", "one", "all", "we"};

// The server's /metrics (at the root of the endpoint's host, where vLLM serves it), parsed; the
// reason in `why` when there is none to read.
std::optional<bench::MetricsSnapshot> readServerMetrics(const bench::EndpointUrl& ep, const std::string& authorization,
                                                       std::string& why) {
  httplib::Client c(ep.host, ep.port);
  c.set_connection_timeout(3, 0);
  c.set_read_timeout(3, 0);
  httplib::Headers headers{{"Accept", "text/plain"}};
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  const auto r = c.Get("/metrics", headers);
  if (!r) {
    why = "no answer (" + httplib::to_string(r.error()) + ")";
    return std::nullopt;
  }
  if (r->status != 200) {
    why = "HTTP " + std::to_string(r->status);
    return std::nullopt;
  }
  std::string error;
  auto snap = bench::parsePrometheusText(r->body, &error);
  if (!snap) why = "not Prometheus's text format: " + error;
  return snap;
}

// Watches one level: live rates for the charts, and the collapse / stall judgement.
class LevelWatch : public LevelObserver {
 public:
  // `streams`: how many can decode at once (the concurrency, or fewer requests); `tokensPerChunk`:
  // output tokens per text chunk in the levels before (1 for a server that streams every token).
  LevelWatch(const SweepOptions& o, int concurrency, int streams, const bench::CollapseBaseline& before,
             double tokensPerChunk, SweepListener* listener)
      : o_(o), concurrency_(concurrency), streams_(streams), before_(before), tokensPerChunk_(tokensPerChunk),
        listener_(listener) {}

  std::string onTick(const LiveTick& tick) override {
    samples_.push_back(tick);
    while (samples_.size() > 2 && samples_[1].elapsedS <= tick.elapsedS - o_.watchWindowS) samples_.pop_front();
    // In chunks; the earlier levels' usage says how many tokens a chunk carries.
    const double agg = rateOver(1.0, tick), perStream = perStreamOver(o_.watchWindowS, tick) * tokensPerChunk_;
    if (listener_) listener_->onTick(concurrency_, tick, agg, perStream);
    if (tick.longestSilenceS >= o_.stallS)
      return "streams stopped producing: a decoding stream sent nothing for " +
             std::to_string(static_cast<int>(tick.longestSilenceS)) + " s at concurrency " +
             std::to_string(concurrency_) + " (" + std::to_string(tick.decoding) + " decoding)";
    const bool windowFull = !samples_.empty() && tick.elapsedS - samples_.front().elapsedS >= o_.watchWindowS * 0.95;
    if (windowFull && tick.decoding > 0)  // delivered: the tokens all streams sent over the window
      return bench::collapseReason(perStream, streams_, before_, o_.collapseFraction,
                                   "over the last " + std::to_string(static_cast<int>(o_.watchWindowS)) + " s",
                                   rateOver(o_.watchWindowS, tick) * tokensPerChunk_);
    return {};
  }
  void onRequestDone(const bench::RequestRecord& r) override {
    if (listener_) listener_->onRequestDone(concurrency_, r);
  }

 private:
  // Text chunks per second over the last `window` seconds (over the gap to the tick before, if
  // the client got no tick inside the window).
  double rateOver(double window, const LiveTick& now) const {
    const LiveTick* from = nullptr;
    for (const auto& s : samples_) {  // oldest first; `now` is the last
      if (s.elapsedS >= now.elapsedS) break;
      from = &s;
      if (s.elapsedS >= now.elapsedS - window - 1e-9) break;  // the oldest inside the window
    }
    return from ? static_cast<double>(now.textChunks - from->textChunks) / (now.elapsedS - from->elapsedS) : 0;
  }
  // Tokens per decoding stream per second over the window (mean decoding streams).
  double perStreamOver(double window, const LiveTick& now) const {
    double streams = 0;
    int n = 0;
    for (const auto& s : samples_)
      if (s.elapsedS >= now.elapsedS - window - 1e-9) streams += s.decoding, ++n;
    const double meanStreams = n ? streams / n : 0;
    return meanStreams > 0 ? rateOver(window, now) / meanStreams : 0;
  }

  const SweepOptions& o_;
  int concurrency_, streams_;
  const bench::CollapseBaseline& before_;
  double tokensPerChunk_;
  SweepListener* listener_;
  std::deque<LiveTick> samples_;
};

}  // namespace

ThroughputSweep::ThroughputSweep(SweepOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  bench::parseEndpointUrl(o.url, o.endpoint);  // throws on a bad URL or endpoint
  if (o.model.empty()) throw std::invalid_argument("--model is required");
  if (o.levels.empty()) throw std::invalid_argument("no concurrency levels");
  for (int c : o.levels)
    if (c < 1 || c > 4096) throw std::invalid_argument("concurrency must be 1..4096, not " + std::to_string(c));
  if (o.numPrompts && *o.numPrompts < 1) throw std::invalid_argument("--num-prompts must be >= 1");
  if (o.durationS && !(*o.durationS > 0)) throw std::invalid_argument("--duration must be > 0");
  if (o.inputLen < 1 || o.outputLen < 1) throw std::invalid_argument("--input-len and --output-len must be >= 1");
  if (o.rate && !(*o.rate > 0)) throw std::invalid_argument("--request-rate must be > 0 or inf");
  if (!(o.burstiness > 0)) throw std::invalid_argument("--burstiness must be > 0");
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (o.pricePerHour && !(*o.pricePerHour >= 0)) throw std::invalid_argument("--price-per-hour must be >= 0");
  if (!(o.collapseFraction > 0 && o.collapseFraction < 1))
    throw std::invalid_argument("--collapse-fraction must be between 0 and 1");
}

std::string ThroughputSweep::requestBody(int index) const {
  const auto& o = options_;
  std::string prompt;
  std::uint64_t x = o.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(index) + 1;
  for (int i = 0; i < o.inputLen; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: distinct prompts, no prefix-cache luck
    if (i) prompt += ' ';
    prompt += kWords[x % (sizeof kWords / sizeof *kWords)];
  }
  nlohmann::json j = {{"model", o.model}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
                      {"temperature", 0.0}};
  if (o.endpoint == "chat") {
    j["messages"] = {{{"role", "user"}, {"content", prompt}}};
    j["max_completion_tokens"] = o.outputLen;
  } else {
    j["prompt"] = prompt;
    j["max_tokens"] = o.outputLen;
  }
  if (o.ignoreEos) j["ignore_eos"] = true;
  return j.dump();
}

LevelPlan ThroughputSweep::planFor(int concurrency, int count, std::uint64_t seed) const {
  LevelPlan p;
  p.concurrency = concurrency;
  if (options_.durationS && count == 0)
    p.durationS = *options_.durationS;
  else
    p.numRequests = count;
  const int distinct = std::min(std::max(count, concurrency * 2), 512);
  for (int i = 0; i < distinct; ++i) p.bodies.push_back(requestBody(i));
  p.inputLen = options_.inputLen;
  p.rate = options_.rate;
  p.burstiness = options_.burstiness;
  p.seed = seed;
  p.requestIdPrefix = "crosslab-bench-c" + std::to_string(concurrency);
  return p;
}

void ThroughputSweep::warmUp(StreamClient& client, const std::atomic<bool>* stop) {
  if (options_.warmup == 0) return;
  // As vLLM's warm-up: concurrent up to the sweep's widest level, so that N requests warm N of
  // the server's rows (its KV cache's pages, first touched then: ~0.5 GB/s on this VM) and open
  // N kept connections, not one.
  const int widest = *std::max_element(options_.levels.begin(), options_.levels.end());
  const auto run = client.runLevel(planFor(std::min(options_.warmup, widest), options_.warmup, 1),
                                   nullptr, stop);
  if (!run.abortReason.empty()) return;  // stopped meanwhile: the caller ends the sweep as stopped
  const bool anyOk = std::any_of(run.records.begin(), run.records.end(), [](const auto& r) { return r.success; });
  if (!anyOk && !run.records.empty())
    throw std::runtime_error("warm-up: every request failed: " + run.records.front().error);
}

SweepResult ThroughputSweep::run(SweepListener* listener, const std::atomic<bool>* stop) {
  const auto& o = options_;
  ClientConfig cc;
  cc.endpoint = bench::parseEndpointUrl(o.url, o.endpoint);
  cc.authorization = o.authorization;
  cc.connectTimeoutS = std::min(o.timeoutS, 30.0);
  cc.idleTimeoutS = o.timeoutS;
  cc.keepAlive = o.keepAlive;
  StreamClient client(cc);
  warmUp(client, stop);
  SweepResult result;
  if (stop && stop->load()) {  // during the warm-up: nothing was measured, nothing failed
    result.stoppedReason = "stopped by the user during the warm-up";
    return result;
  }
  // The server's counters before the first level (after the warm-up); each level's reading is
  // the difference to the read after it, which starts the next one.
  std::optional<bench::MetricsSnapshot> counters;
  if (o.serverMetrics) counters = readServerMetrics(cc.endpoint, o.authorization, result.serverMetrics);
  else result.serverMetrics = "not asked (--no-server-metrics)";
  bench::CollapseBaseline before;  // the levels measured so far
  double tokensPerChunk = 1;
  std::vector<bench::LevelPoint> points;
  for (size_t i = 0; i < o.levels.size() && result.stoppedReason.empty(); ++i) {
    const int c = o.levels[i];
    const int count = o.durationS && !o.numPrompts ? 0 : o.numPrompts.value_or(std::max(8, 2 * c));
    if (listener) listener->onLevelStart(c, count);
    const int streams = count > 0 ? std::min(c, count) : c;  // fewer requests than streams: fewer decode
    LevelWatch watch(o, c, streams, before, tokensPerChunk, listener);
    const auto run = client.runLevel(planFor(c, count, o.seed + i + 2), &watch, stop);
    bench::LevelContext ctx{o.endpoint == "chat" ? "openai-chat" : "openai", o.model, c, o.rate, o.burstiness,
                            o.pricePerHour};
    auto level = bench::computeLevelMetrics(run.records, run.durationS, ctx);
    level.connectionsOpened = run.connectionsOpened;
    if (counters) {
      auto after = readServerMetrics(cc.endpoint, o.authorization, result.serverMetrics);
      if (after) level.server = bench::serverReading(*counters, *after, run.durationS);
      counters = std::move(after);
    }
    const bool stopped = stop && stop->load();
    if (level.completed == 0 && !stopped && run.abortReason.empty()) {  // the endpoint refuses (404, wrong model) or is gone
      std::string first = "no response";
      for (const auto& r : run.records)
        if (!r.error.empty()) {
          first = r.error;
          break;
        }
      result.failure = "every request failed at concurrency " + std::to_string(c) + ": " + first;
      result.stoppedReason = result.failure;
    } else if (!run.abortReason.empty()) {
      result.stoppedReason = run.abortReason;
      if (!stopped) level.collapse = run.abortReason;
    } else if (level.perStreamMeasured) {  // unmeasured: no judgement (level_metrics.h)
      level.collapse =
          bench::collapseReason(level.perStreamTokS, streams, before, o.collapseFraction, {}, level.outputThroughput);
      if (!level.collapse.empty()) result.stoppedReason = level.collapse;
      before.add(streams, level.perStreamTokS, level.outputThroughput);
      std::int64_t chunks = 0;  // of the requests whose tokens totalOutputTokens counts
      for (const auto& r : run.records)
        if (r.success) chunks += r.textChunks;
      if (level.totalOutputTokens > 0 && chunks > 0)
        tokensPerChunk = static_cast<double>(level.totalOutputTokens) / static_cast<double>(chunks);
    }
    if (level.completed > 0)  // a level aborted live completed nothing: no aggregate to weigh
      points.push_back({c, level.outputThroughput, level.perStreamTokS});
    if (listener) listener->onLevelDone(level);
    result.levels.push_back(std::move(level));
  }
  result.knee = bench::findKnee(points);
  return result;
}

}  // namespace crosslab::backends
