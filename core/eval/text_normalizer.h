#pragma once
// The quote-check normal form, in four steps that can be switched off one by one: every run
// of whitespace to one space and trimmed; Unicode NFC; curly quotes, primes and dashes to
// their ASCII look-alikes; lowercase. Optionally keeps, for every byte of the normal form,
// the byte range of the original text it came from, so a match found in the normal form
// can be highlighted in the original.

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

// Normalisation steps (bits). A quote checker's "exact" allows all but kFoldCase.
enum NormalizeStep : unsigned {
  kCollapseSpace = 1u,    // whitespace runs -> one space, trimmed
  kComposeUnicode = 2u,   // Unicode NFC (e + U+0301 == U+00E9)
  kFoldTypography = 4u,   // curly quotes, primes, dashes -> ' " -
  kFoldCase = 8u,         // lowercase
  kAllSteps = 15u,
};

// Names of the steps set in `steps`, in the order above: "whitespace", "Unicode form",
// "quote marks/dashes", "letter case".
std::vector<std::string> normalizeStepNames(unsigned steps);

class TextNormalizer {
 public:
  // keepMap = false skips the origin arrays (quotes need none).
  static NormalizedText normalize(std::string_view text, bool keepMap, unsigned steps = kAllSteps);
  // The steps without which `a` and `b` would differ (0 when they are byte-identical;
  // kAllSteps-bits that could not explain a difference are not reported).
  static unsigned stepsNeeded(std::string_view a, std::string_view b);
  // Words of a normal form: split on spaces, punctuation stripped at word edges,
  // words that were only punctuation dropped.
  static std::vector<Word> words(const std::string& normalized);
};

// Number of code points in the first `byteOffset` bytes of UTF-8 `text`.
size_t codePointOffset(std::string_view text, size_t byteOffset);

}  // namespace crosslab::eval
