#include "core/eval/quote_checker.h"

#include <utf8proc.h>

#include <algorithm>
#include <string_view>

namespace crosslab::eval {

struct QuoteChecker::Prepared {
  NormalizedText exact;  // kExactSteps: letter case kept
  NormalizedText norm;   // every step (case folded): the fuzzy forms
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

// Letters and digits of scripts written with spaces between words. Scripts without them
// (CJK, kana, Thai, ...) have no word edges to respect, so every position counts as one.
bool isWordChar(utf8proc_int32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if ((cp >= 0x0E00 && cp <= 0x0EFF) || (cp >= 0x1000 && cp <= 0x109F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
      (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF66 && cp <= 0xFF9F) || cp >= 0x20000)
    return false;
  const auto cat = utf8proc_category(cp);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) || (cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

utf8proc_int32_t codePointAt(const std::string& text, size_t i) {
  utf8proc_int32_t cp = 0;
  if (utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i), static_cast<utf8proc_ssize_t>(text.size() - i), &cp) <= 0)
    return 0xFFFD;
  return cp;
}

utf8proc_int32_t codePointBefore(const std::string& text, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  return codePointAt(text, i);
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Is byte offset `at` of `text` inside a word ("Zü|rich") or a number ("0|.9", "1,|000")?
bool insideWord(const std::string& text, size_t at) {
  if (at == 0 || at >= text.size()) return false;
  if (isWordChar(codePointBefore(text, at)) && isWordChar(codePointAt(text, at))) return true;
  const auto sep = [](char c) { return c == '.' || c == ','; };
  if (isDigit(text[at - 1]) && sep(text[at]) && at + 1 < text.size() && isDigit(text[at + 1])) return true;
  return at >= 2 && isDigit(text[at]) && sep(text[at - 1]) && isDigit(text[at - 2]);
}

// Does [pos, pos + len) of `text` neither start nor end inside a word or number?
bool wholeWords(const std::string& text, size_t pos, size_t len) {
  return !insideWord(text, pos) && !insideWord(text, pos + len);
}

}  // namespace

std::string quoteMatchNote(const QuoteMatch& m) {
  std::string note;
  if (m.kind == QuoteKind::Fuzzy && !m.caseFolded) {
    note = "4-gram " + std::to_string(static_cast<int>(m.score * 100 + 0.5)) + "%";
    return note;
  }
  if (m.kind != QuoteKind::Exact && m.kind != QuoteKind::Fuzzy) return note;
  if (m.normalized == 0) return "verbatim";
  for (const auto& name : normalizeStepNames(m.normalized)) note += (note.empty() ? "" : ", ") + name;
  return note;
}

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
    p->exact = TextNormalizer::normalize(c, true, kExactSteps);
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
  const auto& form = m.kind == QuoteKind::Exact ? prepared_[index]->exact : prepared_[index]->norm;
  const auto [b, e] = form.originalRange(normBegin, normEnd);
  m.context = static_cast<int>(index);
  m.byteBegin = b;
  m.byteEnd = e;
  m.charBegin = codePointOffset(contexts_[index], b);
  m.charEnd = m.charBegin + codePointOffset(std::string_view(contexts_[index]).substr(b), e - b);
}

QuoteMatch QuoteChecker::runMatch(const std::string& q, bool folded) {
  QuoteMatch m;
  for (size_t i = 0; i < prepared_.size(); ++i) {
    const std::string& text = folded ? prepared_[i]->norm.text : prepared_[i]->exact.text;
    for (auto pos = text.find(q); pos != std::string::npos; pos = text.find(q, pos + 1)) {
      if (!wholeWords(text, pos, q.size())) continue;
      m.kind = folded ? QuoteKind::Fuzzy : QuoteKind::Exact;
      m.caseFolded = folded;
      m.score = 1;
      fillSpan(i, pos, pos + q.size(), m);
      return m;
    }
  }
  return m;
}

// Which normalisations turned the quote into its span (the span's original bytes).
void QuoteChecker::noteSteps(const std::string& quote, QuoteMatch& m) const {
  if (m.context < 0) return;
  const std::string_view span = std::string_view(contexts_[static_cast<size_t>(m.context)]).substr(m.byteBegin, m.byteEnd - m.byteBegin);
  m.normalized = TextNormalizer::stepsNeeded(quote, span);
  if (m.caseFolded) m.normalized |= kFoldCase;
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
  const NormalizedText exact = TextNormalizer::normalize(quote, false, kExactSteps);
  if (exact.text.empty()) return QuoteMatch{QuoteKind::Invalid};
  QuoteMatch m = runMatch(exact.text, false);
  if (m.kind != QuoteKind::Exact) {
    const NormalizedText folded = TextNormalizer::normalize(quote, false);
    m = runMatch(folded.text, true);
    if (m.kind != QuoteKind::Fuzzy) m = gramMatch(folded);
  }
  if (m.kind == QuoteKind::Exact || m.caseFolded) noteSteps(quote, m);
  return m;
}

QuoteMatch QuoteChecker::gramMatch(const NormalizedText& nq) {
  QuoteMatch m;
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
