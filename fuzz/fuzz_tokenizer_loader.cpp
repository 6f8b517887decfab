// libFuzzer: tokenizer.json loading on arbitrary bytes; when a file loads, encoding and
// decoding a fixed text (and the input's own bytes) must round-trip to the same bytes.
#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto tok = tokenizer::BpeTokenizer::fromJson(std::string_view(reinterpret_cast<const char*>(data), size));
    const std::string text = "Hello, wörld! 123 <|eot_id|>\n  x";
    fuzz::require(tok.decode(tok.encode(text, {false, false})) == text, "fixed text does not round-trip");
    const std::string head = fuzz::text(data, std::min<size_t>(size, 64));
    if (tokenizer::isValidUtf8(head))
      fuzz::require(tok.decode(tok.encode(head, {false, false})) == head, "input text does not round-trip");
  } catch (const std::runtime_error& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
