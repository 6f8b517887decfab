#pragma once
// Classifies one SSE data payload of an OpenAI-compatible stream (completions or chat):
// a chunk with choices (and whether it carries text), a usage-only chunk, an error
// object sent mid-stream, the [DONE] sentinel, or something unparseable. Only the
// fields the metrics need are read (simdjson on-demand: no DOM per chunk).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace crosslab::bench {

struct ChunkInfo {
  enum class Kind { Choices, Usage, Error, Done, Other, Malformed };
  Kind kind = Kind::Other;
  bool hasText = false;  // choices[0].text or choices[0].delta.content is a non-empty string
  std::optional<std::int64_t> completionTokens, promptTokens;  // from "usage"
  std::string error;  // Error: the server's message; Malformed: what was wrong
};

class ChunkParser {
 public:
  ChunkParser();
  ~ChunkParser();
  ChunkParser(const ChunkParser&) = delete;
  ChunkParser& operator=(const ChunkParser&) = delete;

  // `payload` must have at least SseSplitter::kPadding spare capacity (it is grown if not).
  ChunkInfo parse(std::string& payload);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The message of a vLLM/OpenAI error body: {"error": {"message": …}} or
// {"object": "error", "message": …}; the body itself (shortened) when it is neither.
std::string errorMessageFromBody(const std::string& body);

}  // namespace crosslab::bench
