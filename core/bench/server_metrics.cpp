#include "core/bench/server_metrics.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace crosslab::bench {
namespace {

bool nameChar(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// A sample's value: a float, or NaN / +Inf / -Inf as Prometheus writes them.
std::optional<double> parseValue(std::string_view v) {
  if (v == "NaN") return std::nan("");
  if (v == "+Inf" || v == "Inf") return HUGE_VAL;
  if (v == "-Inf") return -HUGE_VAL;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  double d = 0;  // from_chars: the C locale's '.', whatever the process's locale (Qt sets it)
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return d;
}

// One sample line into name and value; the reason when it is not one.
bool parseSample(std::string_view line, std::string& name, double& value, std::string& why) {
  size_t i = 0;
  while (i < line.size() && nameChar(line[i], i == 0)) ++i;
  if (i == 0) {
    why = "not a metric name";
    return false;
  }
  name.assign(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {  // labels: quoted values may hold } , = and escapes
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '\\') {
        ++i;
        continue;
      }
      if (c == '"') quoted = !quoted;
      if (!quoted && c == '}') break;
    }
    if (i >= line.size()) {
      why = "labels not closed";
      return false;
    }
    ++i;
  }
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  const auto v = parseValue(line.substr(i, end - i));
  if (!v) {
    why = "no value";
    return false;
  }
  // A timestamp may follow (an integer, milliseconds); nothing else.
  while (end < line.size() && (line[end] == ' ' || line[end] == '\t')) ++end;
  if (end < line.size()) {
    long long ts = 0;
    const auto rest = line.substr(end);
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ts);
    if (ec != std::errc() || p != rest.data() + rest.size()) {
      why = "text after the value";
      return false;
    }
  }
  value = *v;
  return true;
}

std::optional<double> delta(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b) return std::nullopt;
  return *b >= *a ? *b - *a : *b;  // a counter below its last reading: the server restarted
}

// v with `decimals` digits after the point.
std::string fmt(int decimals, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "; decode steps of R rows, M ms each" where the server says (our server: crosslab:).
std::string stepsPart(const ServerReading& r) {
  if (!r.decodeSteps || *r.decodeSteps <= 0 || !r.decodeRows) return {};
  std::string s = "; decode steps of " + fmt(1, *r.decodeRows / *r.decodeSteps) + " rows";
  if (r.decodeStepSeconds) s += ", " + fmt(2, 1e3 * *r.decodeStepSeconds / *r.decodeSteps) + " ms each";
  return s;
}

std::string queuePart(const ServerReading& r) {
  return (r.running ? fmt(0, *r.running) : std::string("?")) + " running, " +
         (r.waiting ? fmt(0, *r.waiting) : std::string("?")) + " waiting";
}

}  // namespace

std::optional<double> MetricsSnapshot::counter(const std::string& name) const {
  for (const std::string& n : {name + "_total", name})
    if (auto it = values.find(n); it != values.end()) return it->second.sum;
  return std::nullopt;
}

std::optional<double> MetricsSnapshot::gauge(const std::string& name) const {
  if (auto it = values.find(name); it != values.end()) return it->second.sum;
  return std::nullopt;
}

std::optional<double> MetricsSnapshot::mean(const std::string& name) const {
  if (auto it = values.find(name); it != values.end() && it->second.samples > 0)
    return it->second.sum / it->second.samples;
  return std::nullopt;
}

std::optional<MetricsSnapshot> parsePrometheusText(std::string_view text, std::string* error) {
  MetricsSnapshot snap;
  size_t lineNo = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string name, why;
    double value = 0;
    if (!parseSample(line, name, value, why)) {
      if (error) {
        const std::string shown(line.substr(0, 60));
        *error = "line " + std::to_string(lineNo) + ": " + why + " (" + shown + (line.size() > 60 ? "…" : "") + ")";
      }
      return std::nullopt;
    }
    auto& v = snap.values[name];
    v.sum += value;
    ++v.samples;
  }
  return snap;
}

ServerReading serverReading(const MetricsSnapshot& before, const MetricsSnapshot& now, double seconds) {
  ServerReading r;
  r.seconds = seconds;
  r.running = now.gauge("vllm:num_requests_running");
  r.waiting = now.gauge("vllm:num_requests_waiting");
  r.kvUsage = now.mean("vllm:kv_cache_usage_perc");
  if (!r.kvUsage) r.kvUsage = now.mean("vllm:gpu_cache_usage_perc");  // vLLM before 0.10
  r.promptTokens = delta(before.counter("vllm:prompt_tokens"), now.counter("vllm:prompt_tokens"));
  r.generatedTokens = delta(before.counter("vllm:generation_tokens"), now.counter("vllm:generation_tokens"));
  r.decodeSteps = delta(before.counter("crosslab:decode_steps"), now.counter("crosslab:decode_steps"));
  r.decodeRows = delta(before.counter("crosslab:decode_rows"), now.counter("crosslab:decode_rows"));
  r.decodeStepSeconds =
      delta(before.counter("crosslab:decode_step_seconds"), now.counter("crosslab:decode_step_seconds"));
  return r;
}

nlohmann::json serverReadingToJson(const ServerReading& r) {
  using nlohmann::json;
  const auto val = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  const bool steps = r.decodeSteps && *r.decodeSteps > 0;
  return {{"generated_tokens", val(r.generatedTokens)},
          {"prompt_tokens", val(r.promptTokens)},
          {"decode_steps", val(r.decodeSteps)},
          {"decode_rows_per_step", steps && r.decodeRows ? json(*r.decodeRows / *r.decodeSteps) : json(nullptr)},
          {"decode_step_ms", steps && r.decodeStepSeconds ? json(1e3 * *r.decodeStepSeconds / *r.decodeSteps)
                                                          : json(nullptr)},
          {"running_after", val(r.running)},
          {"waiting_after", val(r.waiting)},
          {"kv_cache_usage_after", val(r.kvUsage)}};
}

std::optional<StoredServerCount> storedServerCount(std::string_view levelJson) {
  const auto level = nlohmann::json::parse(levelJson, nullptr, false);
  if (!level.is_object()) return std::nullopt;
  const auto server = level.value("server", nlohmann::json());
  if (!server.is_object()) return std::nullopt;
  const auto number = [](const nlohmann::json& j, const char* key) {
    const auto v = j.value(key, nlohmann::json());
    return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
  };
  const auto generated = number(server, "generated_tokens");
  if (!generated) return std::nullopt;
  StoredServerCount c;
  c.generatedTokens = *generated;
  c.clientOutputTokens = number(level, "total_output_tokens");
  c.decodeRowsPerStep = number(server, "decode_rows_per_step");
  c.decodeStepMs = number(server, "decode_step_ms");
  return c;
}

std::string describeLive(const ServerReading& r) {
  std::string s;
  if (r.generatedTokens && r.seconds > 0) s = fmt(0, *r.generatedTokens / r.seconds) + " tok/s generated, ";
  s += queuePart(r);
  if (r.kvUsage) s += ", KV cache " + fmt(0, 100.0 * *r.kvUsage) + "% in use";
  return s + stepsPart(r);
}

std::string describeSweep(const ServerReading& r, std::optional<long long> clientOutputTokens) {
  std::string s = r.generatedTokens ? fmt(0, *r.generatedTokens) + " tokens generated" : "tokens generated: ?";
  if (clientOutputTokens) s += " (the client counted " + std::to_string(*clientOutputTokens) + ")";
  if (r.promptTokens) s += ", " + fmt(0, *r.promptTokens) + " prompt tokens";
  return s + stepsPart(r) + "; now " + queuePart(r);
}

}  // namespace crosslab::bench
