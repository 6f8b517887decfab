#include "core/util/printable.h"

#include <cstdio>

#include "core/tokenizer/utf8.h"

namespace crosslab::util {

std::string printable(std::string_view text, size_t maxBytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (out.size() >= maxBytes) {
      out += "…";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {  // a whole UTF-8 character as it is; a byte that starts none is escaped below
      const size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      if (len > 0 && tokenizer::validUtf8Prefix(text.substr(i, len)) == len) {
        out.append(text.substr(i, len));
        i += len;
        continue;
      }
    }
    char buf[8];
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F || c >= 0x80) std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c)), out += buf;
    else out += char(c);
    ++i;
  }
  return out;
}

}  // namespace crosslab::util
