#include "core/tokenizer/bpe_tokenizer.h"

#include <array>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/tokenizer/utf8.h"

namespace crosslab::tokenizer {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("tokenizer.json: " + what); }

// GPT-2's reversible byte <-> printable code point table: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100.. in byte order.
std::vector<char32_t> byteToCodepoint() {
  std::vector<char32_t> table(256);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? char32_t(b) : next++;
  }
  return table;
}

// A byte-level token string ("Ġhello") back to its raw bytes; false if it is not one.
// Runs once per vocabulary entry (128K for Llama 3) on every load: one pass over the UTF-8,
// the inverse table indexed by code point (the table's code points are all < U+0144).
bool byteLevelToBytes(const std::string& token, std::string& bytes) {
  static const auto inverse = [] {
    std::array<int16_t, 0x144> inv;
    inv.fill(-1);
    const auto table = byteToCodepoint();
    for (int b = 0; b < 256; ++b) inv[size_t(table[b])] = int16_t(b);
    return inv;
  }();
  bytes.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(token.data());
  const size_t n = token.size();
  for (size_t i = 0; i < n;) {
    char32_t c;
    if (p[i] < 0x80) {
      c = p[i];
      i += 1;
    } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
      c = char32_t(p[i] & 0x1F) << 6 | char32_t(p[i + 1] & 0x3F);
      if (c < 0x80) return false;  // overlong
      i += 2;
    } else {
      return false;  // three- and four-byte sequences are all >= U+0800: never byte-level
    }
    if (c >= inverse.size() || inverse[c] < 0) return false;
    bytes += static_cast<char>(inverse[c]);
  }
  return true;
}

// Lookups that tolerate absent keys and wrong types (tokenizer.json is input, not trusted).
std::string str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return {};
  return j[key].get<std::string>();
}
bool flag(const json& j, const char* key, bool fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_boolean()) return fallback;
  return j[key].get<bool>();
}
const json& member(const json& j, const char* key) {
  static const json null;
  if (!j.is_object() || !j.contains(key)) return null;
  return j[key];
}

uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

SplitPattern patternOf(const json& pre) {
  if (pre.is_null()) fail("no pre_tokenizer: not a byte-level BPE tokenizer");
  const std::string type = str(pre, "type");
  if (type == "ByteLevel") {
    if (flag(pre, "add_prefix_space", false)) fail("ByteLevel add_prefix_space is not supported");
    if (!flag(pre, "use_regex", true)) fail("ByteLevel without a split regex is not supported");
    return SplitPattern::Gpt2;
  }
  if (type != "Sequence" || !pre.contains("pretokenizers") || !pre["pretokenizers"].is_array())
    fail("unsupported pre_tokenizer '" + type + "' (byte-level BPE needs Split + ByteLevel)");
  const auto& seq = pre["pretokenizers"];
  if (seq.size() != 2 || str(seq[0], "type") != "Split" || str(seq[1], "type") != "ByteLevel")
    fail("unsupported pre_tokenizer sequence (expected Split + ByteLevel)");
  const auto& split = seq[0];
  if (str(split, "behavior") != "Isolated" || flag(split, "invert", false))
    fail("unsupported Split behavior (expected Isolated)");
  if (!split.contains("pattern") || !split["pattern"].contains("Regex") || !split["pattern"]["Regex"].is_string())
    fail("Split pattern is not a regex");
  return splitPatternFromRegex(split["pattern"]["Regex"].get<std::string>());
}

// Special tokens the post-processor puts before the sequence ("single" template).
std::vector<std::string> templatePrefix(const json& post) {
  if (post.is_null()) return {};
  if (str(post, "type") == "Sequence" && post.contains("processors")) {
    for (const auto& p : post["processors"])
      if (str(p, "type") == "TemplateProcessing") return templatePrefix(p);
    return {};
  }
  if (str(post, "type") != "TemplateProcessing" || !post.contains("single")) return {};
  std::vector<std::string> out;
  for (const auto& piece : post["single"]) {
    if (piece.contains("Sequence")) break;
    if (piece.contains("SpecialToken")) out.push_back(str(piece["SpecialToken"], "id"));
  }
  return out;
}

// Both merge spellings: "a b" and ["a", "b"].
std::pair<std::string_view, std::string_view> mergePair(simdjson::dom::element m) {
  std::string_view s;
  if (!m.get(s)) {
    const size_t sp = s.find(' ', 1);
    if (sp == std::string_view::npos) fail("merge '" + std::string(s) + "' is not two tokens");
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  simdjson::dom::array pair;
  std::string_view a, b;
  if (!m.get(pair) && pair.size() == 2 && !pair.at(0).get(a) && !pair.at(1).get(b)) return {a, b};
  fail("a merge is neither \"a b\" nor [\"a\", \"b\"]");
}

}  // namespace

BpeTokenizer BpeTokenizer::fromJson(std::string_view jsonText) {
  // simdjson reads the bulk (model.vocab and model.merges: ~10 MB for Llama 3, where building
  // nlohmann values took most of a second); the small rest goes to nlohmann for the checks.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object root, vocab;
  simdjson::dom::array merges;
  bool hasVocab = false, hasMerges = false;
  json j = json::object();
  if (parser.parse(jsonText.data(), jsonText.size()).get(doc)) fail("not valid JSON");
  if (doc.get(root)) fail("missing 'model'");
  try {
    for (const auto field : root) {
      simdjson::dom::object modelFields;
      if (field.key != "model" || field.value.get(modelFields)) {
        j[std::string(field.key)] = json::parse(simdjson::minify(field.value));
        continue;
      }
      json m = json::object();
      hasVocab = hasMerges = false;
      for (const auto mf : modelFields) {
        if (mf.key == "vocab") hasVocab = !mf.value.get(vocab);
        else if (mf.key == "merges") hasMerges = !mf.value.get(merges);
        else m[std::string(mf.key)] = json::parse(simdjson::minify(mf.value));
      }
      j["model"] = std::move(m);
    }
  } catch (const json::exception&) {
    fail("not valid JSON");
  }
  if (!j.contains("model") || !j["model"].is_object()) fail("missing 'model'");
  const json& model = j["model"];
  const std::string modelType = str(model, "type");
  if (!modelType.empty() && modelType != "BPE") fail("model type '" + modelType + "' is not byte-level BPE");
  if (!hasVocab) fail("model has no 'vocab' object");
  if (!hasMerges) fail("model has no 'merges' list");
  if (j.contains("normalizer") && !j["normalizer"].is_null()) fail("normalizers are not supported");

  BpeTokenizer t;
  t.pattern_ = patternOf(member(j, "pre_tokenizer"));
  t.ignoreMerges_ = flag(model, "ignore_merges", false);
  // Ids are dense in real tokenizers; allow gaps but not ids that would make the id table huge.
  size_t vocabCount = 0;
  for (const auto field : vocab) (void)field, ++vocabCount;
  const size_t addedCount = j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"].size() : 0;
  const int64_t maxId = int64_t(vocabCount + addedCount) + 65536;
  t.vocab_.reserve(vocabCount);
  t.idToBytes_.reserve(vocabCount + addedCount);
  std::string key, bytes;
  for (const auto field : vocab) {
    key.assign(field.key);
    int64_t id = -1;
    if (field.value.get(id) || id < 0 || id > maxId)
      fail("vocab id of '" + key + "' is not a valid id (0.." + std::to_string(maxId) + ")");
    if (!byteLevelToBytes(key, bytes)) fail("vocab token '" + key + "' is not byte-level: not byte-level BPE");
    t.vocab_[key] = int32_t(id);
    if (size_t(id) >= t.idToBytes_.size()) t.idToBytes_.resize(size_t(id) + 1);
    if (!t.idToBytes_[size_t(id)].empty() || bytes.empty()) fail("vocab id " + std::to_string(id) + " is used twice or empty");
    t.idToBytes_[size_t(id)] = bytes;
  }
  const auto table = byteToCodepoint();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    appendUtf8(s, table[b]);
    const auto it = t.vocab_.find(s);
    if (it == t.vocab_.end()) fail("vocab lacks byte " + std::to_string(b) + ": not byte-level BPE");
    t.byteIds_[b] = it->second;
  }
  int32_t rank = 0;
  t.merges_.reserve(merges.size());
  std::string left, right, joined;
  for (const auto m : merges) {
    const auto [a, b] = mergePair(m);
    left.assign(a);
    right.assign(b);
    joined.assign(left).append(right);
    const auto ia = t.vocab_.find(left), ib = t.vocab_.find(right), im = t.vocab_.find(joined);
    if (ia == t.vocab_.end() || ib == t.vocab_.end() || im == t.vocab_.end())
      fail("merge '" + left + " " + right + "' uses a token missing from the vocab");
    t.merges_.emplace(pairKey(ia->second, ib->second), std::make_pair(rank++, im->second));
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["id"].is_number_integer() ||
          !a["content"].is_string() || a["id"].get<int64_t>() < 0 || a["id"].get<int64_t>() > maxId)
        fail("an added token lacks a valid 'id' or 'content'");
      AddedToken tok{a["content"].get<std::string>(), a["id"].get<int32_t>(), flag(a, "special", false)};
      if (tok.content.empty() || !isValidUtf8(tok.content)) fail("an added token has empty or invalid content");
      if (size_t(tok.id) >= t.idToBytes_.size()) t.idToBytes_.resize(size_t(tok.id) + 1);
      t.idToBytes_[size_t(tok.id)] = tok.content;
      t.addedFirstByte_[static_cast<unsigned char>(tok.content[0])] = true;
      t.added_.push_back(tok);
    }
  }
  t.special_.assign(t.idToBytes_.size(), false);
  for (const auto& a : t.added_) t.special_[size_t(a.id)] = a.special;
  for (const auto& name : templatePrefix(member(j, "post_processor"))) {
    const auto id = t.tokenId(name);
    if (!id) fail("post_processor names unknown token '" + name + "'");
    t.prefix_.push_back(*id);
  }
  return t;
}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& tokenizerJson) {
  std::ifstream in(tokenizerJson, std::ios::binary);
  if (!in) throw std::runtime_error(tokenizerJson.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return fromJson(ss.str());
}

std::optional<int32_t> BpeTokenizer::tokenId(const std::string& content) const {
  for (const auto& a : added_)
    if (a.content == content) return a.id;
  const auto it = vocab_.find(content);
  if (it != vocab_.end()) return it->second;
  return std::nullopt;
}

int32_t BpeTokenizer::vocabSize() const { return static_cast<int32_t>(idToBytes_.size()); }

bool BpeTokenizer::isSpecial(int32_t id) const { return id >= 0 && size_t(id) < special_.size() && special_[size_t(id)]; }

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  if (!isValidUtf8(text)) throw std::runtime_error("text is not valid UTF-8");
  std::vector<int32_t> out;
  if (options.addBos) out = prefix_;
  // Split on added tokens (leftmost, then longest); special ones only when asked.
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    const AddedToken* best = nullptr;
    if (!addedFirstByte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    for (const auto& a : added_) {
      if (a.special && !options.parseSpecial) continue;
      if (text.compare(pos, a.content.size(), a.content) == 0 && (!best || a.content.size() > best->content.size()))
        best = &a;
    }
    if (!best) {
      ++pos;
      continue;
    }
    encodeOrdinary(text.substr(start, pos - start), out);
    out.push_back(best->id);
    pos += best->content.size();
    start = pos;
  }
  encodeOrdinary(text.substr(start), out);
  return out;
}

void BpeTokenizer::encodeOrdinary(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  for (const auto& [b, e] : preTokenize(text, pattern_)) encodeWord(text.substr(b, e - b), out);
}

// Applies merges lowest rank first (leftmost on ties) to the word's byte tokens.
void BpeTokenizer::encodeWord(std::string_view bytes, std::vector<int32_t>& out) const {
  if (ignoreMerges_ || bytes.size() == 1) {
    static const auto table = byteToCodepoint();
    std::string key;
    for (unsigned char b : bytes) appendUtf8(key, table[b]);
    const auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> syms;
  syms.reserve(bytes.size());
  for (unsigned char b : bytes) syms.push_back(byteIds_[b]);
  while (syms.size() > 1) {
    int32_t bestRank = std::numeric_limits<int32_t>::max(), merged = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const auto it = merges_.find(pairKey(syms[i], syms[i + 1]));
      if (it != merges_.end() && it->second.first < bestRank) {
        bestRank = it->second.first;
        merged = it->second.second;
        at = i;
      }
    }
    if (merged < 0) break;
    syms[at] = merged;
    syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  out.insert(out.end(), syms.begin(), syms.end());
}

std::string BpeTokenizer::tokenBytes(int32_t id) const {
  if (id < 0 || size_t(id) >= idToBytes_.size()) throw std::runtime_error("token id " + std::to_string(id) + " is out of range");
  return idToBytes_[size_t(id)];
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skipSpecial) const {
  std::string out;
  for (int32_t id : ids) {
    if (skipSpecial && isSpecial(id)) continue;
    out += tokenBytes(id);
  }
  return out;
}

}  // namespace crosslab::tokenizer
