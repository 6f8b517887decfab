#include "core/tokenizer/bpe_trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "core/model/safetensors_writer.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace crosslab::tokenizer {
namespace {

using ojson = nlohmann::ordered_json;

// GPT-2's byte -> printable code point table (same as the loader's): printable Latin-1
// bytes map to themselves, the other 68 bytes to U+0100.. in byte order.
std::string byteLevelChar(int byte) {
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const char32_t cp = printable ? char32_t(b) : next++;
    if (b == byte) {
      std::string s;
      appendUtf8(s, cp);
      return s;
    }
  }
  return {};
}

uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

struct Word {
  std::vector<int32_t> symbols;
  int64_t count = 0;
};

// Unique pre-tokens of all texts with their counts, as byte-id sequences, in byte order
// (std::map) so that every later step is deterministic.
std::vector<Word> countWords(const std::vector<std::string>& texts) {
  std::map<std::string, int64_t> counts;
  for (const auto& text : texts) {
    if (!isValidUtf8(text)) throw std::runtime_error("BPE training text is not valid UTF-8");
    for (const auto& [b, e] : preTokenize(text, SplitPattern::Llama3)) ++counts[text.substr(b, e - b)];
  }
  std::vector<Word> words;
  words.reserve(counts.size());
  for (const auto& [bytes, n] : counts) {
    Word w{{}, n};
    for (unsigned char c : bytes) w.symbols.push_back(int32_t(c));
    words.push_back(std::move(w));
  }
  return words;
}

// The most frequent adjacent pair; ties to the smallest (left, right) token strings.
bool bestPair(const std::vector<Word>& words, const std::vector<std::string>& tokens, int64_t minFrequency,
              int32_t& left, int32_t& right) {
  std::unordered_map<uint64_t, int64_t> counts;
  for (const auto& w : words)
    for (size_t i = 0; i + 1 < w.symbols.size(); ++i) counts[pairKey(w.symbols[i], w.symbols[i + 1])] += w.count;
  int64_t best = 0;
  for (const auto& [key, n] : counts) {
    const int32_t a = int32_t(key >> 32), b = int32_t(key & 0xffffffffu);
    if (n < best || n < minFrequency) continue;
    if (n == best && std::tie(tokens[size_t(a)], tokens[size_t(b)]) >= std::tie(tokens[size_t(left)], tokens[size_t(right)]))
      continue;
    best = n;
    left = a;
    right = b;
  }
  return best > 0;
}

void applyMerge(std::vector<Word>& words, int32_t left, int32_t right, int32_t merged) {
  for (auto& w : words) {
    auto& s = w.symbols;
    size_t out = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
        s[out++] = merged;
        ++i;
      } else {
        s[out++] = s[i];
      }
    }
    s.resize(out);
  }
}

ojson addedToken(int32_t id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

}  // namespace

const std::vector<std::string>& llama3SpecialTokens() {
  static const std::vector<std::string> tokens = {
      "<|begin_of_text|>",           "<|end_of_text|>",          "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
      "<|start_header_id|>",         "<|end_header_id|>",        "<|eom_id|>",
      "<|eot_id|>",                  "<|python_tag|>"};
  return tokens;
}

const std::string& llama3ChatTemplateJinja() {
  static const std::string tmpl =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
      "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
      "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
  return tmpl;
}

TrainedBpe trainByteLevelBpe(const std::vector<std::string>& texts, const BpeTrainerOptions& options) {
  TrainedBpe out;
  out.specialTokens = llama3SpecialTokens();
  const int32_t bpeSize = options.vocabSize - int32_t(out.specialTokens.size());
  if (bpeSize < 256) throw std::invalid_argument("vocab size must leave room for 256 byte tokens and the special tokens");
  std::unordered_map<std::string, int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    out.tokens.push_back(byteLevelChar(b));
    ids[out.tokens.back()] = b;
  }
  auto words = countWords(texts);
  while (int32_t(out.tokens.size()) < bpeSize) {
    int32_t left = 0, right = 0;
    if (!bestPair(words, out.tokens, std::max<int64_t>(options.minFrequency, 1), left, right)) break;
    const std::string merged = out.tokens[size_t(left)] + out.tokens[size_t(right)];
    auto [it, fresh] = ids.emplace(merged, int32_t(out.tokens.size()));
    if (fresh) out.tokens.push_back(merged);  // a string reached by two different pairs keeps one id
    out.merges.emplace_back(out.tokens[size_t(left)], out.tokens[size_t(right)]);
    applyMerge(words, left, right, it->second);
  }
  return out;
}

int32_t TrainedBpe::specialId(const std::string& content) const {
  for (size_t i = 0; i < specialTokens.size(); ++i)
    if (specialTokens[i] == content) return int32_t(tokens.size() + i);
  throw std::runtime_error("no special token " + content);
}

std::string TrainedBpe::tokenizerJson() const {
  ojson added = ojson::array();
  for (size_t i = 0; i < specialTokens.size(); ++i) added.push_back(addedToken(int32_t(tokens.size() + i), specialTokens[i]));
  const std::string bos = specialTokens.front();
  ojson split = {{"type", "Split"}, {"pattern", {{"Regex", kLlama3SplitRegex}}}, {"behavior", "Isolated"}, {"invert", false}};
  ojson byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  ojson single = ojson::array({{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  ojson pair = single;
  pair.push_back({{"SpecialToken", {{"id", bos}, {"type_id", 1}}}});
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  ojson templ = {{"type", "TemplateProcessing"},
                 {"single", single},
                 {"pair", pair},
                 {"special_tokens", {{bos, {{"id", bos}, {"ids", {specialId(bos)}}, {"tokens", {bos}}}}}}};
  ojson post = {{"type", "Sequence"},
                {"processors",
                 {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}, templ}}};
  ojson vocab = ojson::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = int32_t(i);
  ojson mergeList = ojson::array();
  for (const auto& [a, b] : merges) mergeList.push_back(a + " " + b);
  ojson model = {{"type", "BPE"},       {"dropout", nullptr},      {"unk_token", nullptr},
                 {"continuing_subword_prefix", nullptr},           {"end_of_word_suffix", nullptr},
                 {"fuse_unk", false},   {"byte_fallback", false},  {"ignore_merges", true},
                 {"vocab", vocab},      {"merges", mergeList}};
  ojson j = {{"version", "1.0"},
             {"truncation", nullptr},
             {"padding", nullptr},
             {"added_tokens", added},
             {"normalizer", nullptr},
             {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byteLevel}}}},
             {"post_processor", post},
             {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
             {"model", model}};
  return j.dump(2) + "\n";
}

std::string TrainedBpe::tokenizerConfigJson() const {
  ojson decoderMap = ojson::object();
  for (size_t i = 0; i < specialTokens.size(); ++i) {
    ojson t = addedToken(int32_t(tokens.size() + i), specialTokens[i]);
    t.erase("id");
    decoderMap[std::to_string(tokens.size() + i)] = t;
  }
  ojson j = {{"added_tokens_decoder", decoderMap},
             {"bos_token", "<|begin_of_text|>"},
             {"chat_template", llama3ChatTemplateJinja()},
             {"clean_up_tokenization_spaces", true},
             {"eos_token", "<|eot_id|>"},
             {"model_input_names", {"input_ids", "attention_mask"}},
             {"model_max_length", 4096},
             {"pad_token", "<|finetune_right_pad_id|>"},
             {"tokenizer_class", "PreTrainedTokenizerFast"}};
  return j.dump(2) + "\n";
}

void TrainedBpe::write(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  model::writeFileAtomically(dir / "tokenizer.json", tokenizerJson());
  model::writeFileAtomically(dir / "tokenizer_config.json", tokenizerConfigJson());
}

}  // namespace crosslab::tokenizer
