#include "core/eval/format_checker.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace crosslab::eval {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The body of "```lang\n...\n```" when the whole (trimmed) text is one fence.
std::optional<std::string> fenceBody(const std::string& text) {
  const std::string t = trim(text);
  if (t.size() < 6 || t.compare(0, 3, "```") != 0 || t.compare(t.size() - 3, 3, "```") != 0) return std::nullopt;
  const auto firstNewline = t.find('\n');
  if (firstNewline == std::string::npos || firstNewline >= t.size() - 3) return std::nullopt;
  const std::string info = trim(t.substr(3, firstNewline - 3));
  if (info.find_first_of(" `{") != std::string::npos) return std::nullopt;  // "```json" or "```"
  return t.substr(firstNewline + 1, t.size() - 3 - firstNewline - 1);
}

// Fills answer/evidence; returns an error line or "".
std::string readSchema(const json& doc, FormatResult& r) {
  if (!doc.is_object()) return "not a JSON object";
  if (!doc.contains("answer")) return "missing \"answer\"";
  const json& answer = doc.at("answer");
  if (!answer.is_string()) return "\"answer\" is not a string";
  if (!doc.contains("evidence")) return "missing \"evidence\"";
  const json& evidence = doc.at("evidence");
  if (!evidence.is_array()) return "\"evidence\" is not an array";
  for (const auto& q : evidence) {
    if (!q.is_string()) return "\"evidence\" has a non-string item";
    r.evidence.push_back(q.get<std::string>());
  }
  r.answer = answer.get<std::string>();
  return {};
}

std::string parseError(const std::string& text) {
  try {
    const json doc = json::parse(text);
    if (!doc.is_discarded()) return "not valid JSON";
  } catch (const json::exception& e) {
    // e.id 101 at a position past the object means trailing text (a number too large for a
    // double is out_of_range, also just not JSON we can read).
    std::string what = e.what();
    if (what.find("expected end of input") != std::string::npos) return "trailing text after the JSON";
    return "not valid JSON";
  }
  return "not valid JSON";
}

}  // namespace

const char* formatKindName(FormatKind kind) {
  switch (kind) {
    case FormatKind::Strict: return "strict";
    case FormatKind::Fenced: return "fenced";
    case FormatKind::Invalid: break;
  }
  return "invalid";
}

FormatResult FormatChecker::check(const std::string& output) {
  FormatResult r;
  std::string body = output;
  FormatKind kind = FormatKind::Strict;
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) {
    auto fenced = fenceBody(output);
    if (!fenced) {
      r.error = parseError(output);
      return r;
    }
    body = *fenced;
    kind = FormatKind::Fenced;
    doc = json::parse(body, nullptr, false);
    if (doc.is_discarded()) {
      r.error = "fenced, but " + parseError(body);
      return r;
    }
  }
  if (std::string err = readSchema(doc, r); !err.empty()) {
    r = FormatResult{};
    r.error = err;
    return r;
  }
  r.kind = kind;
  return r;
}

}  // namespace crosslab::eval
