#pragma once
// A judge's rubric: a prompt template with {{placeholders}} and numbered checks, and the
// JSON a judge must reply with.
//   single:   {"checks": {"1": "pass", "2": "fail", ...}, "accept": true|false, "reason": "..."}
//   pairwise: {"winner": "A" | "B" | "tie", "reason": "..."}
// Replies may carry a Markdown fence or text around the object; the first '{' to the last
// '}' is parsed. Anything that does not fit is unparsable (the gate retries, then abstains).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/eval_data.h"

namespace crosslab::eval {

// Replaces {{name}} with vars[name]; throws EvalError naming an unknown placeholder.
std::string renderTemplate(const std::string& tmpl, const std::map<std::string, std::string>& vars);

// Placeholders: question, contexts (numbered "[1] ..."), reference, and output (single) or
// output_a / output_b (pairwise).
std::map<std::string, std::string> rubricVars(const EvalQuestion& q);

struct JudgeReply {
  std::map<int, bool> checks;  // check number -> passed
  std::optional<bool> accept;
  std::string reason;
};

// Requires every check in `gateChecks` (or, when that is empty, "accept"); nullopt when the
// reply does not fit, with *error saying why.
std::optional<JudgeReply> parseJudgeReply(const std::string& content, const std::vector<int>& gateChecks,
                                          std::string* error);

enum class Winner { A, B, Tie };
std::optional<Winner> parsePairwiseReply(const std::string& content, std::string* error);

}  // namespace crosslab::eval
