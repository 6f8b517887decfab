#include "core/bench/level_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

namespace crosslab::bench {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  // numpy's _lerp: a + (b − a)·t, switching ends for t ≥ 0.5 to stay exact at b.
  const double a = values[lo], b = values[hi], diff = b - a;
  return frac >= 0.5 ? b - diff * (1.0 - frac) : a + diff * frac;
}

// numpy.median: the middle value, or the mean of the two middle values.
double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

Summary summarize(const std::vector<double>& seconds) {
  Summary s;
  if (seconds.empty()) return s;
  const double n = static_cast<double>(seconds.size());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double sq = 0;
  for (double v : seconds) sq += (v - mean) * (v - mean);
  s.meanMs = mean * 1000.0;
  s.stdMs = std::sqrt(sq / n) * 1000.0;
  s.medianMs = median(seconds) * 1000.0;
  s.p99Ms = percentile(seconds, 99.0) * 1000.0;
  return s;
}

std::optional<double> usdPerMillionOutputTokens(std::optional<double> pricePerHour, double outputTokS) {
  if (!pricePerHour || outputTokS <= 0) return std::nullopt;
  return *pricePerHour / (outputTokS * 3600.0) * 1e6;
}

namespace {

// vLLM's max_output_tokens_per_s / max_concurrent_requests: token times rebuilt from
// start + TTFT + cumulative ITL, counted in 1-second buckets from the earliest start.
void peakPerSecond(const std::vector<RequestRecord>& records, LevelResult& out) {
  if (records.empty()) return;
  double minStart = std::numeric_limits<double>::max(), maxEnd = 0;
  for (const auto& r : records) {
    minStart = std::min(minStart, r.startS);
    maxEnd = std::max(maxEnd, r.startS + r.latencyS);
  }
  const auto buckets = static_cast<size_t>(std::ceil(maxEnd - minStart)) + 1;
  std::vector<double> tokens(buckets, 0.0), concurrent(buckets, 0.0);
  for (const auto& r : records) {
    if (!r.success) continue;
    double t = r.startS + r.ttftS;
    auto count = [&](double at) {
      const auto b = static_cast<size_t>(at - minStart);
      if (b < buckets) tokens[b] += 1;
    };
    count(t);
    for (double gap : r.itlS) count(t += gap);
    const auto first = static_cast<size_t>(r.startS - minStart);
    const auto last = static_cast<size_t>(r.startS + r.latencyS - minStart);
    for (size_t s = first; s <= last && s < buckets; ++s) concurrent[s] += 1;
  }
  for (size_t b = 0; b < buckets; ++b) {
    out.maxOutputTokensPerS = std::max(out.maxOutputTokensPerS, tokens[b]);
    out.maxConcurrentRequests = std::max(out.maxConcurrentRequests, static_cast<int>(concurrent[b]));
  }
}

std::string tokenSource(const std::vector<RequestRecord>& records) {
  int usage = 0, chunks = 0;
  for (const auto& r : records)
    if (r.success) (r.tokensFromUsage() ? usage : chunks) += 1;
  if (usage == 0 && chunks == 0) return "none";
  return chunks == 0 ? "usage" : usage == 0 ? "chunks" : "mixed";
}

}  // namespace

LevelResult computeLevelMetrics(const std::vector<RequestRecord>& records, double durationS,
                                const LevelContext& context) {
  LevelResult out;
  out.context = context;
  out.requests = records;
  out.numPrompts = static_cast<int>(records.size());
  out.durationS = durationS;
  std::vector<double> ttfts, tpots, itls, e2els, rates;
  for (const auto& r : records) {
    if (!r.success) {
      ++out.failed;
      continue;
    }
    const std::int64_t outLen = r.outputTokens();
    out.totalOutputTokens += outLen;
    out.totalInputTokens += r.inputTokens();
    if (outLen > 1) {
      const double decode = r.latencyS - r.ttftS;
      tpots.push_back(decode / static_cast<double>(outLen - 1));
      if (decode > 0) rates.push_back(static_cast<double>(outLen - 1) / decode);
    }
    itls.insert(itls.end(), r.itlS.begin(), r.itlS.end());
    ttfts.push_back(r.ttftS);
    e2els.push_back(r.latencyS);
    ++out.completed;
  }
  if (durationS > 0) {
    out.requestThroughput = out.completed / durationS;
    out.outputThroughput = static_cast<double>(out.totalOutputTokens) / durationS;
    out.totalTokenThroughput = static_cast<double>(out.totalInputTokens + out.totalOutputTokens) / durationS;
  }
  out.ttft = summarize(ttfts);
  out.tpot = summarize(tpots);
  out.itl = summarize(itls);
  out.e2el = summarize(e2els);
  out.perStreamMeasured = !rates.empty();
  if (!rates.empty()) out.perStreamTokS = std::accumulate(rates.begin(), rates.end(), 0.0) / rates.size();
  out.usdPerMOutputTokens = usdPerMillionOutputTokens(context.pricePerHour, out.outputThroughput);
  out.outputTokensSource = tokenSource(records);
  peakPerSecond(records, out);
  return out;
}

nlohmann::json levelToJson(const LevelResult& l, bool detailed) {
  using nlohmann::json;
  json j = {{"backend", l.context.backend},
            {"model_id", l.context.modelId},
            {"num_prompts", l.numPrompts},
            // vLLM writes float('inf'); strict JSON has no Infinity, so "inf" is a string.
            {"request_rate", l.context.requestRate ? json(*l.context.requestRate) : json("inf")},
            {"burstiness", l.context.burstiness},
            {"max_concurrency", l.context.maxConcurrency},
            {"duration", l.durationS},
            {"completed", l.completed},
            {"failed", l.failed},
            {"total_input_tokens", l.totalInputTokens},
            {"total_output_tokens", l.totalOutputTokens},
            {"request_throughput", l.requestThroughput},
            {"request_goodput", nullptr},
            {"output_throughput", l.outputThroughput},
            {"total_token_throughput", l.totalTokenThroughput},
            {"max_output_tokens_per_s", l.maxOutputTokensPerS},
            {"max_concurrent_requests", l.maxConcurrentRequests}};
  const std::pair<const char*, const Summary*> metrics[] = {
      {"ttft", &l.ttft}, {"tpot", &l.tpot}, {"itl", &l.itl}, {"e2el", &l.e2el}};
  for (const auto& [name, s] : metrics) {
    const std::string n = name;
    j["mean_" + n + "_ms"] = s->meanMs;
    j["median_" + n + "_ms"] = s->medianMs;
    j["std_" + n + "_ms"] = s->stdMs;
    j["p99_" + n + "_ms"] = s->p99Ms;
  }
  json inputLens = json::array(), outputLens = json::array(), ttfts = json::array(), errors = json::array(),
       itls = json::array();
  for (const auto& r : l.requests) {
    inputLens.push_back(r.inputTokens());
    outputLens.push_back(r.success ? r.outputTokens() : 0);
    ttfts.push_back(r.ttftS);
    errors.push_back(r.error);
    if (detailed) itls.push_back(r.itlS);
  }
  j["input_lens"] = inputLens;
  j["output_lens"] = outputLens;
  j["ttfts"] = ttfts;
  j["errors"] = errors;
  if (detailed) j["itls"] = itls;
  j["per_stream_tok_s"] = l.perStreamMeasured ? json(l.perStreamTokS) : json(nullptr);
  j["usd_per_m_output_tokens"] = l.usdPerMOutputTokens ? json(*l.usdPerMOutputTokens) : json(nullptr);
  j["collapse"] = l.collapse.empty() ? json(nullptr) : json(l.collapse);
  j["output_tokens_source"] = l.outputTokensSource;
  j["connections_opened"] = l.connectionsOpened >= 0 ? json(l.connectionsOpened) : json(nullptr);
  j["price_per_hour"] = l.context.pricePerHour ? json(*l.context.pricePerHour) : json(nullptr);
  j["server"] = l.server ? serverReadingToJson(*l.server) : json(nullptr);
  return j;
}

}  // namespace crosslab::bench
