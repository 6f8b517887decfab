#pragma once
// What one benchmark request produced, in vLLM bench serve's terms (RequestFuncOutput):
// times in seconds, measured from the moment the request was issued.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosslab::bench {

struct RequestRecord {
  double startS = 0;         // issue time, seconds since the level started
  double ttftS = 0;          // first chunk with non-empty choices − issue time
  std::vector<double> itlS;  // gaps between successive chunks with non-empty choices
  double latencyS = 0;       // E2EL: last chunk with non-empty choices − issue time
  std::int64_t choiceChunks = 0;  // chunks with non-empty choices
  std::int64_t textChunks = 0;    // of those, the ones carrying non-empty text
  std::optional<std::int64_t> usageCompletionTokens, usagePromptTokens;
  std::int64_t requestedInputLen = 0;  // what we asked for (used when usage is absent)
  bool success = false;
  std::string error;  // empty on success

  // vLLM: usage.completion_tokens when sent (and non-zero); otherwise vLLM re-tokenizes
  // the text, which we cannot do for every server: we count the chunks that carried text.
  bool tokensFromUsage() const { return usageCompletionTokens && *usageCompletionTokens > 0; }
  std::int64_t outputTokens() const { return tokensFromUsage() ? *usageCompletionTokens : textChunks; }
  std::int64_t inputTokens() const { return usagePromptTokens ? *usagePromptTokens : requestedInputLen; }
};

}  // namespace crosslab::bench
