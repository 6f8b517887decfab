#include "core/tokenizer/utf8.h"

#include <stdexcept>

namespace crosslab::tokenizer {
namespace {

// Decodes one code point at text[i]; returns its length in bytes, or 0 when invalid.
size_t decodeOne(std::string_view text, size_t i, char32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  size_t len;
  char32_t min;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

size_t validUtf8Prefix(std::string_view text) {
  char32_t cp;
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = decodeOne(text, i, cp);
    if (n == 0) break;
    i += n;
  }
  return i;
}

bool isValidUtf8(std::string_view text) { return validUtf8Prefix(text) == text.size(); }

void decodeUtf8(std::string_view text, std::u32string& codepoints, std::vector<size_t>& offsets) {
  codepoints.clear();
  offsets.clear();
  char32_t cp;
  for (size_t i = 0; i < text.size();) {
    const size_t n = decodeOne(text, i, cp);
    if (n == 0) throw std::runtime_error("text is not valid UTF-8 (byte " + std::to_string(i) + ")");
    codepoints.push_back(cp);
    offsets.push_back(i);
    i += n;
  }
  offsets.push_back(text.size());
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace crosslab::tokenizer
