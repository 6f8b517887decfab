// Checkpoint formats in-process: safetensors writer/reader round trip and every validation
// rule of the reference reader, config.json parsing, byte-level BPE loading/encoding on a
// small synthetic tokenizer.json, and the sampler.
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/infer/sampler.h"
#include "core/model/model_config.h"
#include "core/model/safetensors.h"
#include "core/model/safetensors_writer.h"
#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/chat_template.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/utf8.h"

#include <unistd.h>

using namespace crosslab;
using nlohmann::json;

namespace {

// A safetensors file image: u64 header length, header text, `data` bytes.
std::string image(const std::string& header, size_t dataBytes, int64_t lengthOverride = -1) {
  std::string out(8, '\0');
  const uint64_t n = lengthOverride >= 0 ? uint64_t(lengthOverride) : header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + header + std::string(dataBytes, '\x01');
}

// The parser's message for `bytes`, or "" when it accepted them.
std::string parseError(const std::string& bytes) {
  try {
    model::parseSafetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const model::SafetensorsError& e) {
    return e.what();
  }
  return "";
}

std::string configError(const json& j) {
  try {
    model::parseModelConfig(j.dump());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

json baseConfig() {
  return {{"model_type", "llama"},   {"hidden_size", 64},    {"intermediate_size", 96}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"vocab_size", 300},   {"rms_norm_eps", 1e-5}};
}

// GPT-2 style byte-level BPE: 256 byte tokens, merges in both spellings, one special token.
json tinyTokenizer() {
  json vocab = json::object();
  int next = 256, id = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    std::string s;
    tokenizer::appendUtf8(s, printable ? char32_t(b) : char32_t(next++));
    vocab[s] = id++;
  }
  vocab["he"] = 256;
  vocab["hel"] = 257;
  vocab["ll"] = 258;
  vocab["Ġw"] = 259;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", json::array({"he", "l"}), "l l", "Ġ w"}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"added_tokens", {{{"id", 260}, {"content", "<|end|>"}, {"special", true}}}},
          {"post_processor", nullptr}};
}

std::string tokenizerError(const json& j) {
  try {
    tokenizer::BpeTokenizer::fromJson(j.dump());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestModelFormats : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void writerRoundTrip() {
    const std::vector<float> f32{1.5f, -2.f, 3.25f, 0.f, 7.f, -1e-3f};
    const std::vector<uint16_t> half{0x3C00, 0xC000, 0x7BFF};  // F16 1, -2, 65504
    const std::vector<uint16_t> bf16{0x3F80, 0x4049};          // BF16 1, 3.140625
    const std::string path = tmp_.filePath("a.safetensors").toStdString();
    model::writeSafetensors(path,
                            {{"w", model::DType::F32, {2, 3}, f32.data(), 24},
                             {"h", model::DType::F16, {3}, half.data(), 6},
                             {"b", model::DType::BF16, {1, 2}, bf16.data(), 4}},
                            {{"format", "pt"}});
    model::SafetensorsFile file(path);
    QCOMPARE((file.header().dataStart - 8) % 8, uint64_t(0));  // header padded to 8
    QCOMPARE(file.header().metadata.at("format"), std::string("pt"));
    const auto* w = file.find("w");
    QVERIFY(w);
    QCOMPARE(w->shape, (std::vector<int64_t>{2, 3}));
    QVERIFY(std::memcmp(file.view(*w).data, f32.data(), 24) == 0);
    QCOMPARE(file.find("h")->dtype, model::DType::F16);
    QVERIFY(std::memcmp(file.view(*file.find("h")).data, half.data(), 6) == 0);
    QVERIFY(std::memcmp(file.view(*file.find("b")).data, bf16.data(), 4) == 0);
    QVERIFY(!file.find("missing"));
    QCOMPARE(std::distance(std::filesystem::directory_iterator(tmp_.path().toStdString()), {}), 1);  // no temp left
  }

  void writerRejectsSizeMismatchAndLeavesNothing() {
    const std::vector<float> f{1, 2, 3};
    const std::string path = tmp_.filePath("bad.safetensors").toStdString();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             model::writeSafetensors(path, {{"w", model::DType::F32, {2, 2}, f.data(), 12}}));
    QVERIFY(!std::filesystem::exists(path));
    QVERIFY(!std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  }

  void readerValidation_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message");
    const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    QTest::newRow("valid") << QByteArray::fromStdString(image(ok, 8)) << "";
    QTest::newRow("too short") << QByteArray("\x01\x02", 2) << "too short";
    QTest::newRow("header over limit") << QByteArray::fromStdString(image(ok, 8, 100'000'001)) << "exceeds the limit";
    QTest::newRow("header past EOF") << QByteArray::fromStdString(image(ok, 8, 5000)) << "past the end";
    QTest::newRow("truncated data") << QByteArray::fromStdString(image(ok, 4)) << "truncated";
    QTest::newRow("trailing bytes") << QByteArray::fromStdString(image(ok, 12)) << "header describes";
    QTest::newRow("non-UTF-8") << QByteArray::fromStdString(image("{\"a\xff\":{}}", 0)) << "UTF-8";
    QTest::newRow("not JSON") << QByteArray::fromStdString(image("{\"a\":", 0)) << "not valid JSON";
    QTest::newRow("overlap") << QByteArray::fromStdString(image(
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
        12)) << "overlaps 'a'";
    QTest::newRow("gap") << QByteArray::fromStdString(image(
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
        12)) << "leaves a gap";
    QTest::newRow("not from 0") << QByteArray::fromStdString(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))
                                << "leaves a gap";
    QTest::newRow("end < begin") << QByteArray::fromStdString(image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8))
                                 << "end < begin";
    QTest::newRow("dtype/shape mismatch") << QByteArray::fromStdString(image(
        R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", 8)) << "need 6";
    QTest::newRow("unknown dtype") << QByteArray::fromStdString(image(R"({"a":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})", 1))
                                   << "unknown dtype 'F7'";
    QTest::newRow("shape overflow") << QByteArray::fromStdString(image(
        R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8)) << "overflows";
    QTest::newRow("negative dim") << QByteArray::fromStdString(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4))
                                  << "non-negative";
    QTest::newRow("missing offsets") << QByteArray::fromStdString(image(R"({"a":{"dtype":"F32","shape":[1]}})", 4))
                                     << "missing 'data_offsets'";
    QTest::newRow("bad metadata") << QByteArray::fromStdString(image(R"({"__metadata__":{"k":1}})", 0)) << "__metadata__";
  }

  void readerValidation() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    const std::string err = parseError(bytes.toStdString());
    if (message.isEmpty()) {
      QCOMPARE(QString::fromStdString(err), QString());
    } else {
      QVERIFY2(QString::fromStdString(err).contains(message), err.c_str());
      QVERIFY(err.find('\n') == std::string::npos);
    }
  }

  void configParsing() {
    json j = baseConfig();
    auto c = model::parseModelConfig(j.dump());
    QCOMPARE(c.headDim, int64_t(16));  // derived
    QCOMPARE(c.numKvHeads, int64_t(4));
    QCOMPARE(c.ropeScaling.type, model::RopeScaling::Type::None);
    j["head_dim"] = 32;
    j["num_key_value_heads"] = 2;
    j["eos_token_id"] = {128001, 128009};
    j["bos_token_id"] = 128000;
    j["rope_scaling"] = {{"type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};  // legacy "type"
    c = model::parseModelConfig(j.dump());
    QCOMPARE(c.headDim, int64_t(32));
    QCOMPARE(c.eosIds, (std::vector<int64_t>{128001, 128009}));
    QCOMPARE(c.bosIds, (std::vector<int64_t>{128000}));
    QCOMPARE(c.ropeScaling.type, model::RopeScaling::Type::Llama3);
    QCOMPARE(c.ropeScaling.factor, 32.0);
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
    QCOMPARE(model::parseModelConfig(j.dump()).ropeScaling.type, model::RopeScaling::Type::Linear);
  }

  void configErrors() {
    for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                            "rms_norm_eps", "model_type"}) {
      json j = baseConfig();
      j.erase(key);
      const auto err = configError(j);
      QVERIFY2(err.find(std::string("missing key '") + key + "'") != std::string::npos, err.c_str());
    }
    json j = baseConfig();
    j["model_type"] = "gpt2";
    QVERIFY(configError(j).find("unsupported model_type 'gpt2'") != std::string::npos);
    j = baseConfig();
    j["num_key_value_heads"] = 3;
    QVERIFY(configError(j).find("multiple") != std::string::npos);
    j = baseConfig();
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    QVERIFY(configError(j).find("unsupported rope_scaling type 'yarn'") != std::string::npos);
    j = baseConfig();
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    QVERIFY(configError(j).find("missing key 'low_freq_factor'") != std::string::npos);
    QVERIFY(configError(json::array()).find("not a JSON object") != std::string::npos);
  }

  void bpeEncodeDecode() {
    const auto tok = tokenizer::BpeTokenizer::fromJson(tinyTokenizer().dump());
    // "hello world": pre-tokens "hello", " world"; merges h+e -> he, he+l -> hel, then l, o;
    // " w" merges to Ġw; the rest stay bytes.
    const auto ids = tok.encode("hello world", {false, false});
    QCOMPARE(ids, (std::vector<int32_t>{257, 'l', 'o', 259, 'o', 'r', 'l', 'd'}));
    QCOMPARE(tok.decode(ids), std::string("hello world"));
    QCOMPARE(tok.encode("x<|end|>", {false, true}), (std::vector<int32_t>{'x', 260}));
    QVERIFY(tok.encode("x<|end|>", {false, false}).size() > 2);  // special text is plain unless asked
    const std::string bytes = "\xe2\x82\xac\t\n";                // raw bytes round trip
    QCOMPARE(tok.decode(tok.encode(bytes, {false, false})), bytes);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tok.encode("\xff", {}));
  }

  void tokenizerErrors() {
    json j = tinyTokenizer();
    j["model"]["type"] = "Unigram";
    QVERIFY(tokenizerError(j).find("not byte-level BPE") != std::string::npos);
    j = tinyTokenizer();
    j["model"]["vocab"].erase("a");
    QVERIFY(tokenizerError(j).find("lacks byte 97") != std::string::npos);
    j = tinyTokenizer();
    j["model"]["merges"].push_back("q z");
    QVERIFY(tokenizerError(j).find("missing from the vocab") != std::string::npos);
    j = tinyTokenizer();
    j["pre_tokenizer"] = {{"type", "Whitespace"}};
    QVERIFY(tokenizerError(j).find("unsupported pre_tokenizer") != std::string::npos);
    j = tinyTokenizer();
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "\\w+"}}}, {"behavior", "Isolated"}},
                                             {{"type", "ByteLevel"}, {"use_regex", false}}}}};
    QVERIFY(tokenizerError(j).find("split pattern") != std::string::npos);
    QVERIFY(tokenizerError(json::array()).find("missing 'model'") != std::string::npos);
    try {
      tokenizer::BpeTokenizer::fromJson("{\"model\": ");
      QFAIL("accepted malformed JSON");
    } catch (const std::exception& e) {
      QVERIFY(std::string(e.what()).find("tokenizer.json: not valid JSON") != std::string::npos);
    }
  }

  void llama3SplitRules() {
    const std::string text = "I'M  12345\n\n  x!!\n";
    std::vector<std::string> pieces;
    for (auto [b, e] : tokenizer::preTokenize(text, tokenizer::SplitPattern::Llama3)) pieces.push_back(text.substr(b, e - b));
    QCOMPARE(pieces, (std::vector<std::string>{"I", "'M", " ", " ", "123", "45", "\n\n", " ", " x", "!!\n"}));
  }

  void llama3ChatTemplate() {
    // LLaMA-Factory's llama3 template (shared/reference/interfaces.md).
    QCOMPARE(tokenizer::renderLlama3Chat({{"system", "Be brief."}, {"user", "Hi"}}),
             std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                         "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    QCOMPARE(tokenizer::renderLlama3Chat({{"user", "a"}, {"assistant", "b"}}, false),
             std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\na<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\nb<|eot_id|>"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tokenizer::renderLlama3Chat({{"tool", "x"}}));
    QCOMPARE(tokenizer::llama3StopWords(), (std::vector<std::string>{"<|eot_id|>", "<|eom_id|>"}));
  }

  void samplerIsSeededAndGreedyIsArgmax() {
    std::vector<float> logits(100);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = float((i * 37) % 17) * 0.3f;
    const int32_t best = infer::argmax(logits.data(), logits.size());
    infer::Sampler greedy({});
    QCOMPARE(greedy.sample(logits.data(), logits.size()), best);
    infer::Sampler topK1({1.0, 1, 1.0, 7});
    QCOMPARE(topK1.sample(logits.data(), logits.size()), best);
    auto draw = [&](uint64_t seed) {
      infer::Sampler s({1.0, 0, 0.95, seed});
      std::vector<int32_t> out;
      for (int i = 0; i < 50; ++i) out.push_back(s.sample(logits.data(), logits.size()));
      return out;
    };
    QCOMPARE(draw(42), draw(42));
    QVERIFY(draw(42) != draw(43));
    infer::Sampler topK3({5.0, 3, 1.0, 1});  // only the three best ids may come out
    std::vector<std::pair<float, int32_t>> sorted;
    for (size_t i = 0; i < logits.size(); ++i) sorted.push_back({logits[i], int32_t(i)});
    std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (int i = 0; i < 100; ++i) {
      const int32_t id = topK3.sample(logits.data(), logits.size());
      QVERIFY(id == sorted[0].second || id == sorted[1].second || id == sorted[2].second);
    }
  }
};

QTEST_GUILESS_MAIN(TestModelFormats)
#include "test_model_formats.moc"
