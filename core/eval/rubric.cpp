#include "core/eval/rubric.h"

#include <nlohmann/json.hpp>

namespace crosslab::eval {
namespace {

using nlohmann::json;

std::optional<json> extractObject(const std::string& content, std::string* error) {
  const auto b = content.find('{');
  const auto e = content.rfind('}');
  if (b == std::string::npos || e == std::string::npos || e < b) {
    *error = "reply has no JSON object";
    return std::nullopt;
  }
  json doc = json::parse(content.substr(b, e - b + 1), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "reply JSON does not parse";
    return std::nullopt;
  }
  return doc;
}

// "pass"/"fail", true/false, 1/0.
std::optional<bool> readPass(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int>() != 0;
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "pass" || s == "PASS" || s == "Pass" || s == "yes" || s == "true") return true;
    if (s == "fail" || s == "FAIL" || s == "Fail" || s == "no" || s == "false") return false;
  }
  return std::nullopt;
}

}  // namespace

std::string renderTemplate(const std::string& tmpl, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (true) {
    const auto open = tmpl.find("{{", i);
    if (open == std::string::npos) break;
    const auto close = tmpl.find("}}", open + 2);
    if (close == std::string::npos) break;
    std::string name = tmpl.substr(open + 2, close - open - 2);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    auto it = vars.find(name);
    if (it == vars.end()) throw EvalError("rubric: unknown placeholder {{" + name + "}}");
    out.append(tmpl, i, open - i);
    out += it->second;
    i = close + 2;
  }
  out.append(tmpl, i, std::string::npos);
  return out;
}

std::map<std::string, std::string> rubricVars(const EvalQuestion& q) {
  std::string contexts;
  for (size_t i = 0; i < q.contexts.size(); ++i)
    contexts += "[" + std::to_string(i + 1) + "] " + q.contexts[i] + (i + 1 < q.contexts.size() ? "\n\n" : "");
  return {{"id", q.id}, {"question", q.question}, {"contexts", contexts}, {"reference", q.reference.value_or("")}};
}

std::optional<JudgeReply> parseJudgeReply(const std::string& content, const std::vector<int>& gateChecks,
                                          std::string* error) {
  auto doc = extractObject(content, error);
  if (!doc) return std::nullopt;
  JudgeReply r;
  if (auto checks = doc->find("checks"); checks != doc->end() && checks->is_object()) {
    for (const auto& [key, value] : checks->items()) {
      int number = 0;
      try {
        number = std::stoi(key);
      } catch (const std::exception&) {
        continue;  // a named check the gate cannot select
      }
      if (auto pass = readPass(value)) r.checks[number] = *pass;
    }
  }
  if (auto a = doc->find("accept"); a != doc->end()) r.accept = readPass(*a);
  if (auto reason = doc->find("reason"); reason != doc->end() && reason->is_string()) r.reason = reason->get<std::string>();
  for (int c : gateChecks)
    if (!r.checks.count(c)) {
      *error = "reply lacks check " + std::to_string(c);
      return std::nullopt;
    }
  if (gateChecks.empty() && !r.accept) {
    *error = "reply lacks \"accept\"";
    return std::nullopt;
  }
  return r;
}

std::optional<Winner> parsePairwiseReply(const std::string& content, std::string* error) {
  auto doc = extractObject(content, error);
  if (!doc) return std::nullopt;
  auto w = doc->find("winner");
  if (w == doc->end() || !w->is_string()) {
    *error = "reply lacks \"winner\"";
    return std::nullopt;
  }
  const auto s = w->get<std::string>();
  if (s == "A" || s == "a") return Winner::A;
  if (s == "B" || s == "b") return Winner::B;
  if (s == "tie" || s == "Tie" || s == "TIE" || s == "parity") return Winner::Tie;
  *error = "\"winner\" must be A, B or tie";
  return std::nullopt;
}

}  // namespace crosslab::eval
