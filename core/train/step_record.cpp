#include "core/train/step_record.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <regex>

namespace crosslab::train {
namespace {

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

}  // namespace

std::optional<double> parseTimedelta(const std::string& text) {
  static const std::regex re(R"(^\s*(?:(-?\d+) days?, )?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) return std::nullopt;
  const double days = m[1].matched ? std::stod(m[1].str()) : 0.0;
  return days * 86400 + std::stod(m[2].str()) * 3600 + std::stod(m[3].str()) * 60 + std::stod(m[4].str());
}

std::optional<StepRecord> parseEventLine(const std::string& line) {
  auto j = nlohmann::json::parse(quoteNonFinite(line), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  StepRecord p;
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

}  // namespace crosslab::train
