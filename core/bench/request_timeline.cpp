#include "core/bench/request_timeline.h"

namespace crosslab::bench {

RequestTimeline::RequestTimeline(double startS, std::int64_t requestedInputLen) : lastS_(startS) {
  record_.startS = startS;
  record_.requestedInputLen = requestedInputLen;
}

bool RequestTimeline::onChunk(const ChunkInfo& chunk, double nowS) {
  if (failed()) return false;
  switch (chunk.kind) {
    case ChunkInfo::Kind::Choices:
      if (record_.choiceChunks == 0)
        record_.ttftS = nowS - record_.startS;
      else
        record_.itlS.push_back(nowS - lastS_);
      lastS_ = nowS;
      ++record_.choiceChunks;
      if (chunk.hasText) ++record_.textChunks;
      break;
    case ChunkInfo::Kind::Error:
      fail("server error mid-stream: " + chunk.error);
      return false;
    case ChunkInfo::Kind::Malformed:
      fail(chunk.error);
      return false;
    case ChunkInfo::Kind::Done:
      sawDone_ = true;
      break;
    case ChunkInfo::Kind::Usage:
    case ChunkInfo::Kind::Other:
      break;
  }
  if (chunk.completionTokens) record_.usageCompletionTokens = chunk.completionTokens;
  if (chunk.promptTokens) record_.usagePromptTokens = chunk.promptTokens;
  return true;
}

void RequestTimeline::fail(const std::string& reason) {
  if (record_.error.empty()) record_.error = reason.empty() ? "failed" : reason;
}

RequestRecord RequestTimeline::finish() {
  if (!failed() && record_.choiceChunks == 0)
    fail("never received a chunk with choices (no TTFT)");
  record_.latencyS = record_.choiceChunks > 0 ? lastS_ - record_.startS : 0.0;
  record_.success = !failed();
  return record_;
}

}  // namespace crosslab::bench
