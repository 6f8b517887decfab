#pragma once
// Splits text into pre-tokens before BPE, as the Hugging Face tokenizers' regex `Split`
// (behavior Isolated) does, with hand-written matchers for the two patterns byte-level BPE
// models use. Character classes follow Oniguruma (what HF tokenizers runs): \p{L} and
// \p{N} are Unicode general categories, \s is the Unicode White_Space property.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crosslab::tokenizer {

enum class SplitPattern {
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+  (GPT-2, ByteLevel use_regex)
  Gpt2,
};

// The pattern a tokenizer.json regex string denotes; throws std::runtime_error otherwise.
SplitPattern splitPatternFromRegex(const std::string& regex);
extern const char* const kLlama3SplitRegex;
extern const char* const kGpt2SplitRegex;

// Byte ranges [begin, end) of the pre-tokens of valid UTF-8 `text`, covering it in order.
std::vector<std::pair<size_t, size_t>> preTokenize(std::string_view text, SplitPattern pattern);

}  // namespace crosslab::tokenizer
