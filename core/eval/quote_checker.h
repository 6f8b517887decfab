#pragma once
// Instrument 2, quote fidelity: is an evidence quote in one of its question's contexts?
// The rule (kExactRule / kFuzzyRule, printed by the CLI and shown by the Review panel):
// Exact: the quote is a verbatim run of whole words of one context, where only runs of
// whitespace, the Unicode form (NFC) and typographic quote marks and dashes may differ;
// letter case must match. Fuzzy: anything looser that still finds the quote in one
// context: the same run with letter case ignored (score 1), or at least 80% of the quote's
// word 4-grams (as a set, case and punctuation at word edges ignored) among the context's
// 4-grams (quotes under 4 words match only as a run). An empty quote is invalid; anything
// else is fabricated. A match says which normalisations it needed (`normalized`); the
// matched span is reported in the ORIGINAL context (bytes and code points).

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
  unsigned normalized = 0;  // NormalizeStep bits the match needed (0: byte-identical to the span)
  bool caseFolded = false;  // fuzzy only because letter case differs
};

// "verbatim" when nothing was normalised, else "whitespace, letter case", …; for fuzzy
// 4-gram matches also the score ("4-gram 92%").
std::string quoteMatchNote(const QuoteMatch& match);

class QuoteChecker {
 public:
  static constexpr double kFuzzyThreshold = 0.8;
  static constexpr size_t kGram = 4;
  static constexpr unsigned kExactSteps = kCollapseSpace | kComposeUnicode | kFoldTypography;
  static constexpr const char* kExactRule =
      "exact = a verbatim run of whole words in a context; only whitespace runs, Unicode form (NFC) and curly "
      "quotes/dashes may differ, letter case must match";
  static constexpr const char* kFuzzyRule =
      "fuzzy = found with letter case ignored, or >= 80% of the quote's word 4-grams in one context";

  // Normalises the contexts once; check() may then be called for many quotes.
  explicit QuoteChecker(const std::vector<std::string>& contexts);
  ~QuoteChecker();
  QuoteChecker(const QuoteChecker&) = delete;
  QuoteChecker& operator=(const QuoteChecker&) = delete;

  QuoteMatch check(const std::string& quote);

 private:
  struct Prepared;
  Prepared& grams(size_t index);  // builds the context's 4-gram index on first use
  // A whole-word occurrence of `q` in the contexts' `folded` or case-kept normal form.
  QuoteMatch runMatch(const std::string& q, bool folded);
  QuoteMatch gramMatch(const NormalizedText& foldedQuote);
  void noteSteps(const std::string& quote, QuoteMatch& m) const;
  void fuzzyMatch(const std::vector<uint64_t>& quoteGrams, size_t quoteWords, QuoteMatch& best);
  void fillSpan(size_t index, size_t normBegin, size_t normEnd, QuoteMatch& m) const;

  const std::vector<std::string>& contexts_;
  std::vector<std::unique_ptr<Prepared>> prepared_;
};

}  // namespace crosslab::eval
