#pragma once
// TextEncoder over the engine's byte-level BPE tokenizer: special-token text such as
// <|eot_id|> becomes its id (as Hugging Face tokenizers treat added special tokens), no
// BOS is added by encode() (encodeSupervised adds it once).

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/train/sft_data.h"

namespace crosslab::train {

class BpeTextEncoder : public TextEncoder {
 public:
  // Throws when the tokenizer has no BOS (post-processor prefix or <|begin_of_text|>).
  explicit BpeTextEncoder(const tokenizer::BpeTokenizer& tokenizer);
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::int32_t bosId() const override { return bos_; }

 private:
  const tokenizer::BpeTokenizer& tokenizer_;
  std::int32_t bos_ = 0;
};

}  // namespace crosslab::train
