// libFuzzer: an OpenAI-compatible SSE response body (our server, vLLM, any endpoint the
// bench client or a judge is pointed at), through the event splitter and the chunk parser.
// The events must not depend on how the body was cut into reads: the whole body at once and
// the same bytes in pieces give the same events. Nothing may throw.
#include <string>
#include <vector>

#include "core/bench/chunk_parser.h"
#include "core/bench/sse_splitter.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace crosslab;

struct Collect : bench::SseSplitter::Handler {
  bench::ChunkParser parser;
  std::vector<std::string> seen;
  void onEvent(std::string& payload) override {
    const std::string copy = payload;
    const auto info = parser.parse(payload);
    if (info.kind == bench::ChunkInfo::Kind::Malformed) fuzz::require(!info.error.empty(), "malformed without a reason");
    seen.push_back("E" + copy + "#" + std::to_string(int(info.kind)) + (info.hasText ? "t" : "-"));
  }
  void onMalformed(std::string_view line) override { seen.push_back("M" + std::string(line)); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body = fuzz::text(data, size);
  Collect whole, pieces;
  bench::SseSplitter a, b;
  a.feed(body, whole);
  // Reads of 1, 2, 3 … bytes, cycling: every cut position is tried somewhere.
  size_t step = 1;
  for (size_t at = 0; at < body.size(); at += step, step = step % 13 + 1)
    b.feed(std::string_view(body).substr(at, step), pieces);
  fuzz::require(whole.seen == pieces.seen, "events depend on how the body was cut");
  fuzz::require(a.hasPartial() == b.hasPartial(), "held-back bytes depend on the cuts");
  (void)bench::errorMessageFromBody(body);
  return 0;
}
