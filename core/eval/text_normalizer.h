#pragma once
// The quote-check normal form: Unicode NFC, lowercase, curly quotes and dashes to ASCII,
// every run of whitespace to one space, trimmed. Optionally keeps, for every byte of the
// normal form, the byte range of the original text it came from, so a match found in the
// normal form can be highlighted in the original.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crosslab::eval {

struct NormalizedText {
  std::string text;              // normal form, UTF-8
  std::vector<uint32_t> origin;  // per normal-form byte: first original byte of its source
  std::vector<uint32_t> originEnd;  // per normal-form byte: one past its source's last byte

  // Original byte range [first, second) covering the normal-form bytes [begin, end).
  std::pair<size_t, size_t> originalRange(size_t begin, size_t end) const;
};

struct Word {
  uint32_t begin;  // byte offsets in the normal form, punctuation at the edges stripped
  uint32_t end;
};

class TextNormalizer {
 public:
  // keepMap = false skips the origin arrays (quotes need none).
  static NormalizedText normalize(std::string_view text, bool keepMap);
  // Words of a normal form: split on spaces, punctuation stripped at word edges,
  // words that were only punctuation dropped.
  static std::vector<Word> words(const std::string& normalized);
};

// Number of code points in the first `byteOffset` bytes of UTF-8 `text`.
size_t codePointOffset(std::string_view text, size_t byteOffset);

}  // namespace crosslab::eval
