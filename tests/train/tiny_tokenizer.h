#pragma once
// A byte-level BPE tokenizer.json without merges for the tiny test checkpoints: ids 0..255
// are the bytes, 256.. the Llama 3 special tokens the llama3 template needs.

#include <string>

namespace crosslab::testing {

// Writes DIR/tokenizer.json (BOS <|begin_of_text|> = 256, <|eot_id|> = 260).
void writeTinyTokenizer(const std::string& dir);

}  // namespace crosslab::testing
