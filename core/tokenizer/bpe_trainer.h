#pragma once
// Learns a byte-level BPE tokenizer from text, the way Hugging Face's BpeTrainer does for
// Llama 3: the Llama 3 regex split, GPT-2's byte-to-unicode alphabet (256 base tokens),
// merges of the most frequent adjacent pair until the target size. Deterministic: ties go
// to the lexicographically smallest pair. Writes a real tokenizer.json (BPE model with vocab
// and merges, Split + ByteLevel pre-tokenizer, ByteLevel decoder, <|begin_of_text|>
// template) and tokenizer_config.json (bos/eos, Llama 3 chat template).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace crosslab::tokenizer {

struct BpeTrainerOptions {
  int32_t vocabSize = 2048;  // total ids, special tokens included
  int64_t minFrequency = 2;  // pairs seen fewer times are not merged
};

struct TrainedBpe {
  std::vector<std::string> tokens;  // id -> byte-level token string ("Ġthe"); ids 0..255 = bytes
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<std::string> specialTokens;  // ids tokens.size() .. in order

  int32_t vocabSize() const { return int32_t(tokens.size() + specialTokens.size()); }
  int32_t specialId(const std::string& content) const;  // throws if absent
  std::string tokenizerJson() const;        // deterministic bytes
  std::string tokenizerConfigJson() const;  // deterministic bytes
  // Both files through temp + rename.
  void write(const std::filesystem::path& dir) const;
};

// The Llama 3 special tokens in Llama 3.1's id order (<|begin_of_text|> first, … <|eot_id|>).
const std::vector<std::string>& llama3SpecialTokens();
// Llama 3 Instruct's Jinja chat template (what tokenizer_config.json carries).
const std::string& llama3ChatTemplateJinja();

// Throws std::invalid_argument if vocabSize leaves no room beyond 256 bytes + specials,
// std::runtime_error if a text is not valid UTF-8.
TrainedBpe trainByteLevelBpe(const std::vector<std::string>& texts, const BpeTrainerOptions& options = {});

}  // namespace crosslab::tokenizer
