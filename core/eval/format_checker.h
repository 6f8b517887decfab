#pragma once
// Instrument 1, format: does an output parse as ONE JSON object with a string "answer"
// and an array of string "evidence"? A Markdown code fence around the JSON is tolerated
// and counted separately ("fenced"); anything else (trailing text, wrong types) is invalid.

#include <string>
#include <vector>

namespace crosslab::eval {

enum class FormatKind { Strict, Fenced, Invalid };

struct FormatResult {
  FormatKind kind = FormatKind::Invalid;
  std::string error;                  // one line, when Invalid
  std::string answer;                 // when parsed
  std::vector<std::string> evidence;  // when parsed, in order (empty strings kept)

  bool parsed() const { return kind != FormatKind::Invalid; }
};

const char* formatKindName(FormatKind kind);  // "strict", "fenced", "invalid"

class FormatChecker {
 public:
  static FormatResult check(const std::string& output);
};

}  // namespace crosslab::eval
