#pragma once
// Turns a stream of token ids into text pieces for a client: holds back an unfinished UTF-8
// sequence and any tail that could still become a stop string, so a stop string never
// reaches the client even when it spans several tokens (as vLLM does).

#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizer/bpe_tokenizer.h"

namespace crosslab::infer {

class TextStreamer {
 public:
  // `tok` may be null (ids only, no text). Empty stop strings are ignored.
  TextStreamer(const tokenizer::BpeTokenizer* tok, std::vector<std::string> stopStrings);

  // Adds one generated token; returns the text that is now safe to send (maybe empty).
  std::string push(int32_t id);
  // True once a stop string appeared; the text after it is dropped.
  bool stopped() const { return stopped_; }
  const std::string& matchedStop() const { return matched_; }
  // The held-back tail at the end of generation (a finished stream sends it).
  std::string flush();
  // Everything sent so far plus what flush() returned.
  const std::string& text() const { return sent_; }

 private:
  size_t safeLength() const;  // bytes of pending_ that cannot start a stop string nor split UTF-8

  const tokenizer::BpeTokenizer* tok_;
  std::vector<std::string> stops_;
  std::string pending_;  // decoded, not yet sent
  std::string sent_;
  std::string matched_;
  bool stopped_ = false;
};

// Length of the longest prefix of `bytes` that is complete UTF-8.
size_t completeUtf8Length(const std::string& bytes);

}  // namespace crosslab::infer
