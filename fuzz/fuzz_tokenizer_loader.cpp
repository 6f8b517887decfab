// libFuzzer: tokenizer.json loading on arbitrary bytes; when a file loads, encoding and
// decoding a fixed text must round-trip to the same bytes.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/tokenizer/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tok = crosslab::tokenizer::BpeTokenizer::fromJson(std::string_view(reinterpret_cast<const char*>(data), size));
    const std::string text = "Hello, wörld! 123 <|eot_id|>\n  x";
    if (tok.decode(tok.encode(text, {false, false})) != text) __builtin_trap();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
