#include "tests/train/tiny_tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace crosslab::testing {
namespace {

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n.
std::string byteSymbol(int b) {
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  int cp = b;
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

void writeTinyTokenizer(const std::string& dir) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byteSymbol(b)] = b;
  nlohmann::json added = nlohmann::json::array();
  const char* specials[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  for (int i = 0; i < 5; ++i) added.push_back({{"id", 256 + i}, {"content", specials[i]}, {"special", true}});
  nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream out(dir + "/tokenizer.json");
  out << j.dump();
  if (!out) throw std::runtime_error("cannot write tokenizer.json");
}

}  // namespace crosslab::testing
