#pragma once
// The difference between two outputs, as the Review panel shows it: JSON-aware when both
// parse (word diff of "answer", evidence quotes kept / only in A / only in B), otherwise a
// word-level diff of the raw text (longest common subsequence over whitespace-split words).

#include <string>
#include <vector>

namespace crosslab::eval {

struct DiffToken {
  enum Op { Same, Removed, Added };  // Removed: only in A; Added: only in B
  Op op;
  std::string text;
};

struct OutputDiff {
  bool json = false;                // both outputs parsed (strict or fenced)
  std::vector<DiffToken> answer;    // json: word diff of "answer"
  std::vector<DiffToken> evidence;  // json: one token per quote
  std::vector<DiffToken> words;     // !json: word diff of the raw text
  bool identical() const;
};

std::vector<DiffToken> wordDiff(const std::string& a, const std::string& b);
OutputDiff diffOutputs(const std::string& a, const std::string& b);
// The same verdict as diffOutputs(a, b).identical(), in linear time (for filters).
bool outputsIdentical(const std::string& a, const std::string& b);

}  // namespace crosslab::eval
