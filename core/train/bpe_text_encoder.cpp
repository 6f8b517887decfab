#include "core/train/bpe_text_encoder.h"

#include <stdexcept>

namespace crosslab::train {

BpeTextEncoder::BpeTextEncoder(const tokenizer::BpeTokenizer& tokenizer) : tokenizer_(tokenizer) {
  if (!tokenizer.bosPrefix().empty()) {
    bos_ = tokenizer.bosPrefix().front();
  } else if (auto id = tokenizer.tokenId("<|begin_of_text|>")) {
    bos_ = *id;
  } else {
    throw std::runtime_error("tokenizer.json has no BOS token (<|begin_of_text|>)");
  }
}

std::vector<std::int32_t> BpeTextEncoder::encode(const std::string& text) const {
  tokenizer::EncodeOptions o;
  o.addBos = false;
  o.parseSpecial = true;
  return tokenizer_.encode(text, o);
}

}  // namespace crosslab::train
