#include "core/eval/quote_checker.h"

#include <algorithm>
#include <string_view>

namespace crosslab::eval {

struct QuoteChecker::Prepared {
  NormalizedText norm;
  std::vector<Word> words;
  std::vector<uint64_t> gramAt;  // gramAt[p] = hash of words p..p+3
  std::vector<uint64_t> sorted;  // gramAt, sorted, for lookups
  bool gramsReady = false;
};

namespace {

uint64_t hashWord(std::string_view w) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : w) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t mix(uint64_t h, uint64_t w) { return (h ^ (w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull; }

// Hash of every run of kGram consecutive words, by start position.
std::vector<uint64_t> gramHashes(const std::string& text, const std::vector<Word>& words) {
  std::vector<uint64_t> out;
  if (words.size() < QuoteChecker::kGram) return out;
  std::vector<uint64_t> wh;
  wh.reserve(words.size());
  for (const auto& w : words) wh.push_back(hashWord(std::string_view(text).substr(w.begin, w.end - w.begin)));
  out.reserve(words.size() - QuoteChecker::kGram + 1);
  for (size_t p = 0; p + QuoteChecker::kGram <= words.size(); ++p) {
    uint64_t h = 0;
    for (size_t k = 0; k < QuoteChecker::kGram; ++k) h = mix(h, wh[p + k]);
    out.push_back(h);
  }
  return out;
}

bool contains(const std::vector<uint64_t>& sorted, uint64_t h) { return std::binary_search(sorted.begin(), sorted.end(), h); }

}  // namespace

const char* quoteKindName(QuoteKind kind) {
  switch (kind) {
    case QuoteKind::Exact: return "exact";
    case QuoteKind::Fuzzy: return "fuzzy";
    case QuoteKind::Fabricated: return "fabricated";
    case QuoteKind::Invalid: break;
  }
  return "invalid";
}

QuoteChecker::QuoteChecker(const std::vector<std::string>& contexts) : contexts_(contexts) {
  prepared_.reserve(contexts.size());
  for (const auto& c : contexts) {
    auto p = std::make_unique<Prepared>();
    p->norm = TextNormalizer::normalize(c, true);
    prepared_.push_back(std::move(p));
  }
}

QuoteChecker::~QuoteChecker() = default;

QuoteChecker::Prepared& QuoteChecker::grams(size_t index) {
  Prepared& p = *prepared_[index];
  if (!p.gramsReady) {
    p.words = TextNormalizer::words(p.norm.text);
    p.gramAt = gramHashes(p.norm.text, p.words);
    p.sorted = p.gramAt;
    std::sort(p.sorted.begin(), p.sorted.end());
    p.gramsReady = true;
  }
  return p;
}

void QuoteChecker::fillSpan(size_t index, size_t normBegin, size_t normEnd, QuoteMatch& m) const {
  const auto [b, e] = prepared_[index]->norm.originalRange(normBegin, normEnd);
  m.context = static_cast<int>(index);
  m.byteBegin = b;
  m.byteEnd = e;
  m.charBegin = codePointOffset(contexts_[index], b);
  m.charEnd = m.charBegin + codePointOffset(std::string_view(contexts_[index]).substr(b), e - b);
}

QuoteMatch QuoteChecker::exactMatch(const std::string& q) {
  QuoteMatch m;
  for (size_t i = 0; i < prepared_.size(); ++i) {
    const auto pos = prepared_[i]->norm.text.find(q);
    if (pos == std::string::npos) continue;
    m.kind = QuoteKind::Exact;
    m.score = 1;
    fillSpan(i, pos, pos + q.size(), m);
    return m;
  }
  return m;
}

// Best context by share of the quote's distinct 4-grams; the span is the densest window
// of matching 4-gram starts no longer than the quote.
void QuoteChecker::fuzzyMatch(const std::vector<uint64_t>& qg, size_t quoteWords, QuoteMatch& best) {
  for (size_t i = 0; i < prepared_.size(); ++i) {
    Prepared& p = grams(i);
    size_t found = 0;
    for (uint64_t h : qg) found += contains(p.sorted, h) ? 1 : 0;
    const double score = static_cast<double>(found) / static_cast<double>(qg.size());
    if (score <= best.score) continue;
    best.score = score;
    if (found * 5 < qg.size() * 4) continue;  // below 80%: remember the score only
    std::vector<size_t> hits;
    for (size_t pos = 0; pos < p.gramAt.size(); ++pos)
      if (std::binary_search(qg.begin(), qg.end(), p.gramAt[pos])) hits.push_back(pos);
    size_t bestFrom = 0, bestTo = 0, lo = 0;
    for (size_t hi = 0; hi < hits.size(); ++hi) {
      while (hits[hi] - hits[lo] + kGram > quoteWords + 2) ++lo;
      if (hi - lo > bestTo - bestFrom) bestFrom = lo, bestTo = hi;
    }
    best.kind = QuoteKind::Fuzzy;
    fillSpan(i, p.words[hits[bestFrom]].begin, p.words[hits[bestTo] + kGram - 1].end, best);
  }
}

QuoteMatch QuoteChecker::check(const std::string& quote) {
  const NormalizedText nq = TextNormalizer::normalize(quote, false);
  if (nq.text.empty()) return QuoteMatch{QuoteKind::Invalid};
  QuoteMatch m = exactMatch(nq.text);
  if (m.kind == QuoteKind::Exact) return m;
  const auto words = TextNormalizer::words(nq.text);
  if (words.size() < kGram) return m;  // short quotes match only exactly
  std::vector<uint64_t> qg = gramHashes(nq.text, words);
  std::sort(qg.begin(), qg.end());
  qg.erase(std::unique(qg.begin(), qg.end()), qg.end());
  fuzzyMatch(qg, words.size(), m);
  if (m.kind != QuoteKind::Fuzzy) {
    m.context = -1;
    m.kind = QuoteKind::Fabricated;
  }
  return m;
}

}  // namespace crosslab::eval
