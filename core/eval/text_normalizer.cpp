#include "core/eval/text_normalizer.h"

#include <utf8proc.h>

#include <array>

namespace crosslab::eval {
namespace {

constexpr utf8proc_option_t kNfc = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);

bool isAsciiSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

bool isUnicodeSpace(utf8proc_int32_t cp) {
  const auto cat = utf8proc_category(cp);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP || cp == 0x85 ||
         (cp < 0x80 && isAsciiSpace(static_cast<unsigned char>(cp)));
}

// Curly quotes, primes and dashes to their ASCII look-alikes; others unchanged.
utf8proc_int32_t foldPunctuation(utf8proc_int32_t cp) {
  switch (cp) {
    case 0x2018: case 0x2019: case 0x201A: case 0x201B: case 0x2032: case 0x2035:
      return '\'';
    case 0x201C: case 0x201D: case 0x201E: case 0x201F: case 0x2033: case 0x2036:
      return '"';
    case 0x2010: case 0x2011: case 0x2012: case 0x2013: case 0x2014: case 0x2015:
    case 0x2212: case 0xFE58: case 0xFE63: case 0xFF0D:
      return '-';
    default:
      return cp;
  }
}

// Decodes one code point at `i`; invalid bytes read as U+FFFD of length 1.
utf8proc_ssize_t decode(std::string_view s, size_t i, utf8proc_int32_t& cp) {
  auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                            static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  if (n <= 0) {
    cp = 0xFFFD;
    return 1;
  }
  return n;
}

bool isNonStarter(utf8proc_int32_t cp) { return utf8proc_get_property(cp)->combining_class != 0; }

class Builder {
 public:
  Builder(NormalizedText& out, bool keepMap) : out_(out), keepMap_(keepMap) {}

  void space(size_t begin) {  // a whitespace code point, collapsed
    if (!pendingSpace_ && !out_.text.empty()) {
      pendingSpace_ = true;
      spaceBegin_ = begin;
    }
  }
  // The common case: one ASCII byte from original byte `at`.
  void ascii(char c, size_t at) {
    if (pendingSpace_) {
      push(" ", 1, spaceBegin_, at);
      pendingSpace_ = false;
    }
    out_.text.push_back(c);
    if (!keepMap_) return;
    out_.origin.push_back(static_cast<uint32_t>(at));
    out_.originEnd.push_back(static_cast<uint32_t>(at + 1));
  }
  // Appends code point `cp` that came from original bytes [begin, end).
  void emit(utf8proc_int32_t cp, size_t begin, size_t end) {
    if (pendingSpace_) {
      push(" ", 1, spaceBegin_, begin);
      pendingSpace_ = false;
    }
    std::array<utf8proc_uint8_t, 4> buf{};
    const auto n = cp < 0x80 ? (buf[0] = static_cast<utf8proc_uint8_t>(cp), 1) : utf8proc_encode_char(cp, buf.data());
    push(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(n), begin, end);
  }

 private:
  void push(const char* bytes, size_t n, size_t begin, size_t end) {
    out_.text.append(bytes, n);
    if (!keepMap_) return;
    out_.origin.insert(out_.origin.end(), n, static_cast<uint32_t>(begin));
    out_.originEnd.insert(out_.originEnd.end(), n, static_cast<uint32_t>(end));
  }

  NormalizedText& out_;
  bool keepMap_;
  bool pendingSpace_ = false;
  size_t spaceBegin_ = 0;
};

// Per code point: whitespace, lowercase, typography, as `steps` ask.
void emitCodePoint(utf8proc_int32_t cp, size_t begin, size_t end, unsigned steps, Builder& b) {
  if ((steps & kCollapseSpace) && isUnicodeSpace(cp)) {
    b.space(begin);
    return;
  }
  if (steps & kFoldCase) cp = utf8proc_tolower(cp);
  if (steps & kFoldTypography) cp = foldPunctuation(cp);
  b.emit(cp, begin, end);
}

// NFC of one segment (a starter and the combining marks after it), then per code point
// lowercase / fold / whitespace. Every output byte maps to the whole segment.
void normalizeSegment(std::string_view s, size_t begin, size_t end, unsigned steps, Builder& b) {
  if (!(steps & kComposeUnicode)) {  // code points as written
    for (size_t i = begin; i < end;) {
      utf8proc_int32_t cp = 0;
      const auto n = static_cast<size_t>(decode(s, i, cp));
      emitCodePoint(cp, i, i + n, steps, b);
      i += n;
    }
    return;
  }
  std::array<utf8proc_int32_t, 32> small{};
  std::vector<utf8proc_int32_t> large;
  utf8proc_int32_t* buf = small.data();
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(s.data() + begin);
  const auto len = static_cast<utf8proc_ssize_t>(end - begin);
  auto n = utf8proc_decompose(bytes, len, buf, static_cast<utf8proc_ssize_t>(small.size()), kNfc);
  if (n > static_cast<utf8proc_ssize_t>(small.size())) {
    large.resize(static_cast<size_t>(n));
    buf = large.data();
    n = utf8proc_decompose(bytes, len, buf, n, kNfc);
  }
  if (n < 0) {  // invalid UTF-8 inside the segment: keep a replacement character
    b.emit(0xFFFD, begin, end);
    return;
  }
  n = utf8proc_normalize_utf32(buf, n, kNfc);
  for (utf8proc_ssize_t k = 0; k < n; ++k) emitCodePoint(buf[k], begin, end, steps, b);
}

bool isPunctuation(utf8proc_int32_t cp) {
  if (cp < 0x80) return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') || (cp >= '[' && cp <= '`') ||
                        (cp >= '{' && cp <= '~');
  const auto cat = utf8proc_category(cp);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

// Start of the code point that ends just before byte `end`.
size_t previousStart(const std::string& s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

}  // namespace

std::pair<size_t, size_t> NormalizedText::originalRange(size_t begin, size_t end) const {
  if (begin >= end || end > origin.size()) return {0, 0};
  return {origin[begin], originEnd[end - 1]};
}

std::vector<std::string> normalizeStepNames(unsigned steps) {
  std::vector<std::string> names;
  if (steps & kCollapseSpace) names.push_back("whitespace");
  if (steps & kComposeUnicode) names.push_back("Unicode form");
  if (steps & kFoldTypography) names.push_back("quote marks/dashes");
  if (steps & kFoldCase) names.push_back("letter case");
  return names;
}

unsigned TextNormalizer::stepsNeeded(std::string_view a, std::string_view b) {
  if (a == b) return 0;
  unsigned needed = 0;
  for (unsigned step : {kCollapseSpace, kComposeUnicode, kFoldTypography, kFoldCase})
    if (normalize(a, false, kAllSteps & ~step).text != normalize(b, false, kAllSteps & ~step).text) needed |= step;
  return needed;
}

NormalizedText TextNormalizer::normalize(std::string_view s, bool keepMap, unsigned steps) {
  NormalizedText out;
  out.text.reserve(s.size());
  if (keepMap) {
    out.origin.reserve(s.size());
    out.originEnd.reserve(s.size());
  }
  Builder b(out, keepMap);
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool asciiAlone = c < 0x80 && (i + 1 == s.size() || static_cast<unsigned char>(s[i + 1]) < 0x80);
    if (asciiAlone) {  // fast path: ASCII not followed by a combining mark
      if ((steps & kCollapseSpace) && isAsciiSpace(c)) b.space(i);
      else b.ascii(static_cast<char>((steps & kFoldCase) && c >= 'A' && c <= 'Z' ? c + 32 : c), i);
      ++i;
      continue;
    }
    utf8proc_int32_t cp = 0;
    size_t end = i + static_cast<size_t>(decode(s, i, cp));
    while (end < s.size()) {  // extend over following combining marks
      utf8proc_int32_t next = 0;
      const auto n = decode(s, end, next);
      if (!isNonStarter(next)) break;
      end += static_cast<size_t>(n);
    }
    normalizeSegment(s, i, end, steps, b);
    i = end;
  }
  return out;
}

std::vector<Word> TextNormalizer::words(const std::string& t) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < t.size()) {
    size_t end = t.find(' ', i);
    if (end == std::string::npos) end = t.size();
    size_t b = i, e = end;
    utf8proc_int32_t cp = 0;
    while (b < e) {
      const auto n = decode(t, b, cp);
      if (!isPunctuation(cp)) break;
      b += static_cast<size_t>(n);
    }
    while (e > b) {
      const size_t start = previousStart(t, e);
      decode(t, start, cp);
      if (!isPunctuation(cp)) break;
      e = start;
    }
    if (e > b) words.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
    i = end + 1;
  }
  return words;
}

size_t codePointOffset(std::string_view text, size_t byteOffset) {
  size_t n = 0;
  for (size_t i = 0; i < byteOffset && i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace crosslab::eval
