#include "core/tokenizer/pre_tokenizer.h"

#include <unicode/uchar.h>

#include <stdexcept>

#include "core/tokenizer/utf8.h"

namespace crosslab::tokenizer {

const char* const kLlama3SplitRegex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt2SplitRegex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

enum : unsigned char { kLetter = 1, kNumber = 2, kSpace = 4, kCrLf = 8 };

unsigned char classify(char32_t c) {
  if (c == '\r' || c == '\n') return kSpace | kCrLf;
  if (c < 0x80) {  // fast path for ASCII
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return kLetter;
    if (c >= '0' && c <= '9') return kNumber;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return kSpace;
    return 0;
  }
  const auto mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  if (mask & U_GC_L_MASK) return kLetter;
  if (mask & U_GC_N_MASK) return kNumber;
  if (u_isUWhiteSpace(static_cast<UChar32>(c))) return kSpace;
  return 0;
}

// A view of the text as code points with their classes; matchers return the end index.
struct Cursor {
  const std::u32string& cp;
  const std::vector<unsigned char>& cls;
  size_t n() const { return cp.size(); }
  bool is(size_t i, unsigned char mask) const { return i < n() && (cls[i] & mask); }
  bool other(size_t i) const { return i < n() && !(cls[i] & (kLetter | kNumber | kSpace)); }
  size_t run(size_t i, unsigned char mask) const {
    while (is(i, mask)) ++i;
    return i;
  }
  size_t runOther(size_t i) const {
    while (other(i)) ++i;
    return i;
  }
};

char32_t lower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's 't 're 've 'm 'll 'd; 0 when none. ASCII case folding only when `ignoreCase`.
size_t contraction(const Cursor& c, size_t i, bool ignoreCase) {
  if (c.cp[i] != '\'' || i + 1 >= c.n()) return 0;
  const auto at = [&](size_t k) { return k < c.n() ? (ignoreCase ? lower(c.cp[k]) : c.cp[k]) : U'\0'; };
  const char32_t a = at(i + 1), b = at(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

// The three whitespace alternatives shared by both patterns, after \s*[\r\n]+ (Llama 3 only).
size_t whitespace(const Cursor& c, size_t i, bool newlineRule) {
  const size_t e = c.run(i, kSpace);
  if (newlineRule) {  // \s*[\r\n]+ : backtracking ends the match after the run's last CR/LF
    for (size_t k = e; k > i; --k)
      if (c.is(k - 1, kCrLf)) return k;
  }
  if (e == c.n() || e - i == 1) return e;  // \s+(?!\S) fails for a lone space before text: \s+
  return e - 1;                            // \s+(?!\S): leave the last space to the next word
}

size_t matchLlama3(const Cursor& c, size_t i) {
  if (size_t e = contraction(c, i, true)) return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  const size_t j = (!c.is(i, kCrLf | kLetter | kNumber)) ? i + 1 : i;
  if (c.is(j, kLetter)) return c.run(j, kLetter);
  if (c.is(i, kLetter)) return c.run(i, kLetter);
  // \p{N}{1,3}
  if (c.is(i, kNumber)) {
    size_t e = i;
    while (e < i + 3 && c.is(e, kNumber)) ++e;
    return e;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t k = c.cp[i] == ' ' ? i + 1 : i;
  if (c.other(k)) return c.run(c.runOther(k), kCrLf);
  return whitespace(c, i, true);
}

size_t matchGpt2(const Cursor& c, size_t i) {
  if (size_t e = contraction(c, i, false)) return e;
  const size_t j = c.cp[i] == ' ' ? i + 1 : i;
  if (c.is(j, kLetter)) return c.run(j, kLetter);
  if (c.is(j, kNumber)) return c.run(j, kNumber);
  if (c.other(j)) return c.runOther(j);
  return whitespace(c, i, false);
}

}  // namespace

SplitPattern splitPatternFromRegex(const std::string& regex) {
  if (regex == kLlama3SplitRegex) return SplitPattern::Llama3;
  if (regex == kGpt2SplitRegex) return SplitPattern::Gpt2;
  throw std::runtime_error("unsupported pre-tokenizer split pattern (supported: Llama 3, GPT-2)");
}

std::vector<std::pair<size_t, size_t>> preTokenize(std::string_view text, SplitPattern pattern) {
  std::u32string cp;
  std::vector<size_t> offsets;
  decodeUtf8(text, cp, offsets);
  std::vector<unsigned char> cls(cp.size());
  for (size_t i = 0; i < cp.size(); ++i) cls[i] = classify(cp[i]);
  const Cursor c{cp, cls};
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < cp.size();) {
    size_t e = pattern == SplitPattern::Llama3 ? matchLlama3(c, i) : matchGpt2(c, i);
    if (e <= i) e = i + 1;  // every code point is matched by some alternative; stay safe
    out.emplace_back(offsets[i], offsets[e]);
    i = e;
  }
  return out;
}

}  // namespace crosslab::tokenizer
