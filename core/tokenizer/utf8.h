#pragma once
// Strict UTF-8 (no overlongs, no surrogates, max U+10FFFF) decoding and encoding.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace crosslab::tokenizer {

bool isValidUtf8(std::string_view text);

// Bytes of the longest prefix of `text` that is valid UTF-8 (text.size() when all of it is).
size_t validUtf8Prefix(std::string_view text);

// Code points of valid UTF-8 text, with the byte offset where each starts
// (offsets.size() == codepoints.size() + 1; the last entry is text.size()).
// Throws std::runtime_error on invalid UTF-8.
void decodeUtf8(std::string_view text, std::u32string& codepoints, std::vector<size_t>& offsets);

void appendUtf8(std::string& out, char32_t cp);

}  // namespace crosslab::tokenizer
