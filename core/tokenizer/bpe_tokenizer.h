#pragma once
// Byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (Llama 3, GPT-2
// family): added/special tokens, regex pre-tokenizer, byte-level alphabet, ranked merges.
// Decoding gives back the exact bytes.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/pre_tokenizer.h"

namespace crosslab::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
};

struct EncodeOptions {
  bool addBos = true;          // the post-processor's prefix (Llama 3: <|begin_of_text|>)
  bool parseSpecial = false;   // recognise special-token text such as "<|eot_id|>"
};

class BpeTokenizer {
 public:
  // Throws std::runtime_error ("tokenizer.json: ...") for malformed files and for models
  // that are not byte-level BPE.
  static BpeTokenizer fromJson(std::string_view jsonText);
  static BpeTokenizer load(const std::filesystem::path& tokenizerJson);

  // `text` must be valid UTF-8 (std::runtime_error otherwise).
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Exact bytes; special tokens as their text unless skipSpecial. Unknown ids throw.
  std::string decode(const std::vector<int32_t>& ids, bool skipSpecial = false) const;
  std::string tokenBytes(int32_t id) const;

  int32_t vocabSize() const;  // highest id + 1
  std::optional<int32_t> tokenId(const std::string& content) const;  // added tokens and vocab
  const std::vector<int32_t>& bosPrefix() const { return prefix_; }
  bool isSpecial(int32_t id) const;

 private:
  void encodeOrdinary(std::string_view text, std::vector<int32_t>& out) const;
  void encodeWord(std::string_view bytes, std::vector<int32_t>& out) const;

  SplitPattern pattern_ = SplitPattern::Llama3;
  bool ignoreMerges_ = false;
  std::unordered_map<std::string, int32_t> vocab_;          // byte-level token string -> id
  std::vector<std::string> idToBytes_;                      // id -> raw bytes (vocab + added)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left,right) -> (rank, merged id)
  int32_t byteIds_[256] = {};                               // raw byte -> its single-byte token
  std::vector<AddedToken> added_;
  bool addedFirstByte_[256] = {};  // quick reject while scanning text for added tokens
  std::vector<int32_t> prefix_;
  std::vector<bool> special_;
};

}  // namespace crosslab::tokenizer
