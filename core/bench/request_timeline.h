#pragma once
// Builds a RequestRecord from stream events as they arrive, with the rules of vLLM's
// bench client: TTFT at the first chunk with non-empty choices, ITL between such chunks,
// E2EL at the last one; usage when sent. An error chunk, a malformed chunk, an HTTP error
// or a broken connection fails the request with its reason; it is never dropped.

#include <string>

#include "core/bench/chunk_parser.h"
#include "core/bench/request_record.h"

namespace crosslab::bench {

class RequestTimeline {
 public:
  RequestTimeline(double startS, std::int64_t requestedInputLen);

  // `nowS` in the same clock as startS. Returns false once the request has failed.
  bool onChunk(const ChunkInfo& chunk, double nowS);
  void fail(const std::string& reason);
  bool failed() const { return !record_.error.empty(); }
  bool sawDone() const { return sawDone_; }
  bool started() const { return record_.choiceChunks > 0; }
  double lastChunkS() const { return lastS_; }
  const RequestRecord& record() const { return record_; }
  // Ends the request: success iff no failure and at least one chunk with choices.
  RequestRecord finish();

 private:
  RequestRecord record_;
  double lastS_;
  bool sawDone_ = false;
};

}  // namespace crosslab::bench
