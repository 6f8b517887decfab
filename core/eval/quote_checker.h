#pragma once
// Instrument 2, quote fidelity: is an evidence quote in one of its question's contexts?
// Both sides are normalised (TextNormalizer). Exact: the normalised quote is a substring
// of a normalised context. Fuzzy: at least 80% of the quote's word 4-grams (as a set)
// occur among one context's 4-grams (quotes under 4 words match only exactly). An empty
// quote is invalid; anything else is fabricated. The matched span is reported in the
// ORIGINAL context (bytes and code points) for highlighting.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/eval/text_normalizer.h"

namespace crosslab::eval {

enum class QuoteKind { Exact, Fuzzy, Fabricated, Invalid };
const char* quoteKindName(QuoteKind kind);  // "exact", "fuzzy", "fabricated", "invalid"

struct QuoteMatch {
  QuoteKind kind = QuoteKind::Fabricated;
  int context = -1;         // index into the question's contexts; -1 when none
  size_t byteBegin = 0;     // matched span in the original context, UTF-8 bytes [begin, end)
  size_t byteEnd = 0;
  size_t charBegin = 0;     // the same span in code points
  size_t charEnd = 0;
  double score = 0;         // 1 for exact; share of the quote's 4-grams found (best context) otherwise
};

class QuoteChecker {
 public:
  static constexpr double kFuzzyThreshold = 0.8;
  static constexpr size_t kGram = 4;

  // Normalises the contexts once; check() may then be called for many quotes.
  explicit QuoteChecker(const std::vector<std::string>& contexts);
  ~QuoteChecker();
  QuoteChecker(const QuoteChecker&) = delete;
  QuoteChecker& operator=(const QuoteChecker&) = delete;

  QuoteMatch check(const std::string& quote);

 private:
  struct Prepared;
  Prepared& grams(size_t index);  // builds the context's 4-gram index on first use
  QuoteMatch exactMatch(const std::string& normalizedQuote);
  void fuzzyMatch(const std::vector<uint64_t>& quoteGrams, size_t quoteWords, QuoteMatch& best);
  void fillSpan(size_t index, size_t normBegin, size_t normEnd, QuoteMatch& m) const;

  const std::vector<std::string>& contexts_;
  std::vector<std::unique_ptr<Prepared>> prepared_;
};

}  // namespace crosslab::eval
