#pragma once
// Instrument 3, the judge gate: one or more judges (OpenAI-compatible endpoint + model +
// rubric), temperature 0. A gate selects which numbered rubric checks count. A reply that
// does not parse is retried up to max_attempts times and then recorded as an abstention,
// never as accept. A judge that never answered (unreachable, refused, timed out on every
// attempt) did not measure: "not_measured" (core/eval/verdict.h), never a reject or 0%.
// The gate accepts only when every judge accepts; one reject rejects; otherwise a judge
// that did not measure leaves the gate not measured. Pairwise mode asks
// twice with A/B swapped and keeps a verdict only when both orders agree ("inconsistent"
// otherwise). The HTTP side is a ChatTransport (backends/ implements it over HTTP).
//
// Gate file (JSON):
//   {"name": "rebuilt", "mode": "single" | "pairwise", "checks": [2, 3, 4],
//    "rubric": "...{{question}}...{{contexts}}...{{output}}..." | "rubric_file": "rubric.txt",
//    "max_attempts": 3, "timeout_s": 60, "http_retries": 3, "backoff_s": 1, "max_tokens": 512,
//    "judges": [{"name": "gemma", "url": "https://host/v1", "model": "gemma-3-27b",
//                "api_key_env": "GEMMA_KEY"}]}
// API keys are read from the environment variable a judge names; they are never stored.

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/eval/eval_data.h"
#include "core/eval/rubric.h"

namespace crosslab::eval {

struct JudgeSpec {
  std::string name, url, model, apiKeyEnv;
};

struct GateSpec {
  std::string name;
  bool pairwise = false;
  std::vector<int> checks;
  std::string rubric;
  std::vector<JudgeSpec> judges;
  int maxAttempts = 3;     // tries per judge per question until a reply parses
  double timeoutS = 60;    // per HTTP request
  int httpRetries = 3;     // extra tries on 429 / 5xx / transport errors
  double backoffS = 1;     // first backoff; doubles per retry
  int maxTokens = 512;
};

// Throws EvalError with one line. `baseDir` resolves rubric_file.
GateSpec parseGateSpec(const std::string& jsonText, const std::filesystem::path& baseDir, const std::string& name);
GateSpec loadGateSpec(const std::filesystem::path& path);

struct ChatRequest {
  std::string url, model, apiKey, prompt;
  double timeoutS = 60;
  int retries = 3;
  double backoffS = 1;
  int maxTokens = 512;
};

struct ChatResult {
  bool ok = false;
  std::string content;  // the assistant message
  std::string error;    // one line when !ok
  int httpStatus = 0;
  double latencyMs = 0;
  long promptTokens = 0, completionTokens = 0;
  int attempts = 0;     // HTTP requests made, retries included
};

class ChatTransport {
 public:
  virtual ~ChatTransport() = default;
  virtual ChatResult complete(const ChatRequest& request) = 0;
};

// One judge's verdict on one question (single: accept/reject/abstain; pairwise, in model
// terms: x/y/tie/inconsistent/abstain).
struct JudgeVerdict {
  std::string judge;
  std::string verdict;  // a name of eval::Verdict
  bool answered() const { return !replies.empty(); }  // the judge was reached at least once
  std::map<int, bool> checks;
  std::string reason;
  std::vector<std::string> replies;  // raw assistant messages, every attempt
  std::vector<std::string> errors;   // why attempts failed
  double latencyMs = 0;
  long promptTokens = 0, completionTokens = 0;
  int requests = 0;
};

struct GateResult {
  // single: accept/reject/abstain/not_measured; pairwise: x/y/tie/inconsistent/disagree/abstain/not_measured
  std::string verdict;
  std::vector<JudgeVerdict> judges;
};

class JudgeGate {
 public:
  using KeyLookup = std::function<std::string(const std::string& envName)>;
  // Throws EvalError when a judge's key variable is named but unset.
  JudgeGate(GateSpec spec, ChatTransport& transport, const KeyLookup& keys);

  const GateSpec& spec() const { return spec_; }
  GateResult judge(const EvalQuestion& q, const std::string& output);
  // x and y are two models' outputs for q.
  GateResult judgePair(const EvalQuestion& q, const std::string& x, const std::string& y);

 private:
  ChatResult ask(size_t judge, const std::string& prompt, JudgeVerdict& v);
  JudgeVerdict judgeOne(size_t judge, const std::string& prompt);
  std::string pairwiseOrder(size_t judge, const std::string& prompt, JudgeVerdict& v);

  GateSpec spec_;
  ChatTransport& transport_;
  std::vector<std::string> keys_;
};


}  // namespace crosslab::eval
