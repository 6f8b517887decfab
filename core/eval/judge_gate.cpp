#include "core/eval/judge_gate.h"

#include <nlohmann/json.hpp>

#include "core/eval/verdict.h"

namespace crosslab::eval {
namespace {

using nlohmann::json;

template <typename T>
T optional(const json& doc, const char* key, T fallback, const std::string& name) {
  auto it = doc.find(key);
  if (it == doc.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw EvalError(name + ": \"" + key + "\" has the wrong type");
  }
}

JudgeSpec parseJudge(const json& j, const std::string& name) {
  if (!j.is_object()) throw EvalError(name + ": each judge must be an object");
  JudgeSpec s{optional<std::string>(j, "name", "", name), optional<std::string>(j, "url", "", name),
              optional<std::string>(j, "model", "", name), optional<std::string>(j, "api_key_env", "", name)};
  if (s.url.empty() || s.model.empty()) throw EvalError(name + ": every judge needs \"url\" and \"model\"");
  if (j.contains("api_key")) throw EvalError(name + ": put API keys in the environment (\"api_key_env\"), not in the gate file");
  if (s.name.empty()) s.name = s.model;
  return s;
}

}  // namespace

GateSpec parseGateSpec(const std::string& text, const std::filesystem::path& baseDir, const std::string& name) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw EvalError(name + ": not a JSON object");
  GateSpec g;
  g.name = optional<std::string>(doc, "name", "gate", name);
  const auto mode = optional<std::string>(doc, "mode", "single", name);
  if (mode != "single" && mode != "pairwise") throw EvalError(name + ": \"mode\" must be single or pairwise");
  g.pairwise = mode == "pairwise";
  g.checks = optional<std::vector<int>>(doc, "checks", {}, name);
  g.rubric = optional<std::string>(doc, "rubric", "", name);
  if (auto file = optional<std::string>(doc, "rubric_file", "", name); !file.empty())
  {
    std::filesystem::path path(file);
    g.rubric = readFile(path.is_absolute() ? path : baseDir / path);
  }
  if (g.rubric.empty()) throw EvalError(name + ": needs \"rubric\" or \"rubric_file\"");
  g.maxAttempts = optional<int>(doc, "max_attempts", g.maxAttempts, name);
  g.timeoutS = optional<double>(doc, "timeout_s", g.timeoutS, name);
  g.httpRetries = optional<int>(doc, "http_retries", g.httpRetries, name);
  g.backoffS = optional<double>(doc, "backoff_s", g.backoffS, name);
  g.maxTokens = optional<int>(doc, "max_tokens", g.maxTokens, name);
  if (g.maxAttempts < 1 || g.maxAttempts > 10) throw EvalError(name + ": \"max_attempts\" must be 1..10");
  auto judges = doc.find("judges");
  if (judges == doc.end() || !judges->is_array() || judges->empty()) throw EvalError(name + ": needs a non-empty \"judges\" array");
  for (const auto& j : *judges) g.judges.push_back(parseJudge(j, name));
  // Render once with dummy values so a bad placeholder fails before any request.
  auto vars = rubricVars(EvalQuestion{});
  vars[g.pairwise ? "output_a" : "output"] = "";
  if (g.pairwise) vars["output_b"] = "";
  renderTemplate(g.rubric, vars);
  return g;
}

GateSpec loadGateSpec(const std::filesystem::path& path) {
  return parseGateSpec(readFile(path), path.parent_path(), path.string());
}

JudgeGate::JudgeGate(GateSpec spec, ChatTransport& transport, const KeyLookup& keys)
    : spec_(std::move(spec)), transport_(transport) {
  for (const auto& j : spec_.judges) {
    std::string key;
    if (!j.apiKeyEnv.empty()) {
      key = keys(j.apiKeyEnv);
      if (key.empty())
        throw EvalError("judge " + j.name + ": no API key: environment variable " + j.apiKeyEnv +
                        " is not set and no keyring entry of that name");
    }
    keys_.push_back(std::move(key));
  }
}

ChatResult JudgeGate::ask(size_t judge, const std::string& prompt, JudgeVerdict& v) {
  const JudgeSpec& j = spec_.judges[judge];
  ChatRequest req{j.url, j.model, keys_[judge], prompt, spec_.timeoutS, spec_.httpRetries, spec_.backoffS, spec_.maxTokens};
  ChatResult r = transport_.complete(req);
  v.requests += r.attempts;
  v.latencyMs += r.latencyMs;
  v.promptTokens += r.promptTokens;
  v.completionTokens += r.completionTokens;
  if (r.ok) v.replies.push_back(r.content);
  else v.errors.push_back(r.error);
  return r;
}

JudgeVerdict JudgeGate::judgeOne(size_t judge, const std::string& prompt) {
  JudgeVerdict v;
  v.judge = spec_.judges[judge].name;
  v.verdict = "abstain";
  for (int attempt = 0; attempt < spec_.maxAttempts; ++attempt) {
    const ChatResult r = ask(judge, prompt, v);
    if (!r.ok) continue;
    std::string error;
    auto reply = parseJudgeReply(r.content, spec_.checks, &error);
    if (!reply) {
      v.errors.push_back(error);
      continue;
    }
    bool pass = true;
    for (int c : spec_.checks) pass = pass && reply->checks.at(c);
    if (spec_.checks.empty()) pass = *reply->accept;
    v.verdict = pass ? "accept" : "reject";
    v.checks = reply->checks;
    v.reason = reply->reason;
    break;
  }
  if (!v.answered()) {
    v.verdict = verdictName(Verdict::NotMeasured);
    v.reason = "no answer: " + (v.errors.empty() ? std::string("no request made") : v.errors.back());
  }
  return v;
}

GateResult JudgeGate::judge(const EvalQuestion& q, const std::string& output) {
  auto vars = rubricVars(q);
  vars["output"] = output;
  const std::string prompt = renderTemplate(spec_.rubric, vars);
  GateResult g;
  bool anyReject = false, anyAbstain = false, anyUnmeasured = false;
  for (size_t i = 0; i < spec_.judges.size(); ++i) {
    g.judges.push_back(judgeOne(i, prompt));
    const Verdict v = parseVerdict(g.judges.back().verdict);
    anyReject = anyReject || v == Verdict::Reject;
    anyAbstain = anyAbstain || v == Verdict::Abstain;
    anyUnmeasured = anyUnmeasured || v == Verdict::NotMeasured;
  }
  // Accept only on agreement: one reject rejects; otherwise a judge that was never reached
  // leaves the gate unmeasured, and one abstention withholds accept.
  g.verdict = verdictName(anyReject       ? Verdict::Reject
                          : anyUnmeasured ? Verdict::NotMeasured
                          : anyAbstain    ? Verdict::Abstain
                                          : Verdict::Accept);
  return g;
}

// "A", "B", "tie", or "" (abstain) for one order.
std::string JudgeGate::pairwiseOrder(size_t judge, const std::string& prompt, JudgeVerdict& v) {
  for (int attempt = 0; attempt < spec_.maxAttempts; ++attempt) {
    const ChatResult r = ask(judge, prompt, v);
    if (!r.ok) continue;
    std::string error;
    auto w = parsePairwiseReply(r.content, &error);
    if (!w) {
      v.errors.push_back(error);
      continue;
    }
    return *w == Winner::A ? "A" : *w == Winner::B ? "B" : "tie";
  }
  return {};
}

GateResult JudgeGate::judgePair(const EvalQuestion& q, const std::string& x, const std::string& y) {
  auto vars = rubricVars(q);
  vars["output_a"] = x;
  vars["output_b"] = y;
  const std::string xFirst = renderTemplate(spec_.rubric, vars);
  std::swap(vars["output_a"], vars["output_b"]);
  const std::string yFirst = renderTemplate(spec_.rubric, vars);
  GateResult g;
  for (size_t i = 0; i < spec_.judges.size(); ++i) {
    JudgeVerdict v;
    v.judge = spec_.judges[i].name;
    const std::string w1 = pairwiseOrder(i, xFirst, v);  // A = x
    const std::string w2 = pairwiseOrder(i, yFirst, v);  // A = y
    const std::string m1 = w1 == "A" ? "x" : w1 == "B" ? "y" : w1;
    const std::string m2 = w2 == "A" ? "y" : w2 == "B" ? "x" : w2;
    v.verdict = (m1.empty() || m2.empty()) ? "abstain" : m1 == m2 ? m1 : "inconsistent";
    v.reason = "order x,y: " + (w1.empty() ? std::string("no verdict") : w1) + "; order y,x: " +
               (w2.empty() ? std::string("no verdict") : w2);
    if (!v.answered()) {
      v.verdict = verdictName(Verdict::NotMeasured);
      v.reason = "no answer: " + (v.errors.empty() ? std::string("no request made") : v.errors.back());
    }
    g.judges.push_back(std::move(v));
  }
  g.verdict = g.judges.front().verdict;
  for (const auto& v : g.judges)
    if (parseVerdict(v.verdict) == Verdict::NotMeasured) {
      g.verdict = v.verdict;
      return g;
    }
  for (const auto& v : g.judges) {
    if (parseVerdict(v.verdict) == Verdict::Abstain) {
      g.verdict = v.verdict;
      break;
    }
    if (v.verdict != g.verdict) g.verdict = verdictName(Verdict::Disagree);
  }
  return g;
}

}  // namespace crosslab::eval
