// BPE trainer: the tokenizer.json it writes loads in our engine's BpeTokenizer, round-trips
// exact bytes, compresses text, carries the Llama 3 special tokens and chat template, and
// is byte-identical for the same input. Also SHA-256 (the eval set's id in the store)
// against Qt's independent implementation.
#include <QCryptographicHash>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/bpe_trainer.h"
#include "core/util/sha256.h"
#include "tests/tokenizer/trainer_texts.h"

using namespace crosslab;

class TestBpeTrainer : public QObject {
  Q_OBJECT

 private:
  tokenizer::TrainedBpe trained_;
  std::string json_;

 private slots:
  void initTestCase() {
    tokenizer::BpeTrainerOptions o;
    o.vocabSize = 768;
    trained_ = tokenizer::trainByteLevelBpe(testing::trainerCorpus(), o);
    json_ = trained_.tokenizerJson();
  }

  void vocabHasTheRequestedSize() {
    QCOMPARE(trained_.vocabSize(), 768);
    QCOMPARE(int(trained_.tokens.size()) + int(trained_.specialTokens.size()), 768);
    QVERIFY(trained_.merges.size() >= trained_.tokens.size() - 256);
  }

  void loadsAndRoundTripsExactBytes() {
    const auto tok = tokenizer::BpeTokenizer::fromJson(json_);
    QCOMPARE(tok.vocabSize(), 768);
    for (const auto& text : testing::probeTexts()) {
      const auto ids = tok.encode(text, {false, false});
      QCOMPARE(tok.decode(ids), text);
      const auto withSpecial = tok.encode(text, {true, true});
      if (text.find("<|") == std::string::npos) QCOMPARE(tok.decode(withSpecial, true), text);
      QCOMPARE(tok.decode(withSpecial).substr(0, 17), std::string("<|begin_of_text|>"));
    }
  }

  void mergesCompressDomainText() {
    const auto tok = tokenizer::BpeTokenizer::fromJson(json_);
    size_t bytes = 0, ids = 0;
    for (const auto& text : testing::probeTexts()) {
      if (text.find("Question") == std::string::npos && text.find("answer") == std::string::npos) continue;
      bytes += text.size();
      ids += tok.encode(text, {false, false}).size();
    }
    QVERIFY(bytes > 1000);
    // Bytes per token on unseen domain text; a trainer that learned nothing gives 1.0.
    QVERIFY2(double(bytes) / double(ids) > 2.5, qPrintable(QString::number(double(bytes) / double(ids))));
  }

  void specialTokensAndTemplate() {
    const auto tok = tokenizer::BpeTokenizer::fromJson(json_);
    const int32_t bos = trained_.specialId("<|begin_of_text|>"), eot = trained_.specialId("<|eot_id|>");
    QCOMPARE(bos, int32_t(trained_.tokens.size()));
    QCOMPARE(tok.bosPrefix(), std::vector<int32_t>{bos});
    QVERIFY(tok.isSpecial(eot));
    const auto ids = tok.encode("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", {false, true});
    QCOMPARE(ids.front(), trained_.specialId("<|start_header_id|>"));
    QCOMPARE(ids.back(), eot);
    // Not recognised unless asked: plain text then.
    QVERIFY(tok.encode("<|eot_id|>", {false, false}).size() > 1);

    const auto j = nlohmann::json::parse(json_);
    QCOMPARE(j["model"]["type"].get<std::string>(), std::string("BPE"));
    QCOMPARE(j["pre_tokenizer"]["pretokenizers"][1]["type"].get<std::string>(), std::string("ByteLevel"));
    QCOMPARE(j["decoder"]["type"].get<std::string>(), std::string("ByteLevel"));
    for (const auto& a : j["added_tokens"]) QVERIFY(a["special"].get<bool>());
    const auto cfg = nlohmann::json::parse(trained_.tokenizerConfigJson());
    QCOMPARE(cfg["bos_token"].get<std::string>(), std::string("<|begin_of_text|>"));
    QCOMPARE(cfg["eos_token"].get<std::string>(), std::string("<|eot_id|>"));
    QVERIFY(cfg["chat_template"].get<std::string>().find("<|start_header_id|>") != std::string::npos);
    QCOMPARE(cfg["added_tokens_decoder"].size(), trained_.specialTokens.size());
  }

  void deterministic() {
    tokenizer::BpeTrainerOptions o;
    o.vocabSize = 768;
    QCOMPARE(tokenizer::trainByteLevelBpe(testing::trainerCorpus(), o).tokenizerJson(), json_);
    auto other = testing::trainerCorpus();
    other.pop_back();
    other.push_back("entirely different text, repeated: zyzzyva zyzzyva zyzzyva zyzzyva");
    QVERIFY(tokenizer::trainByteLevelBpe(other, o).tokenizerJson() != json_);
  }

  void writesBothFiles() {
    QTemporaryDir dir;
    trained_.write(dir.path().toStdString());
    std::ifstream in(dir.filePath("tokenizer.json").toStdString(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    QCOMPARE(ss.str(), json_);
    QVERIFY(QFile::exists(dir.filePath("tokenizer_config.json")));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 2);  // no temp files left
  }

  void badInput() {
    tokenizer::BpeTrainerOptions o;
    o.vocabSize = 200;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tokenizer::trainByteLevelBpe({"abc"}, o));
    o.vocabSize = 768;
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tokenizer::trainByteLevelBpe({"ok", std::string("\xff\xfe")}, o));
    // A tiny corpus stops early (no pair seen twice) instead of inventing tokens.
    const auto small = tokenizer::trainByteLevelBpe({"abcd"}, o);
    QCOMPARE(int(small.tokens.size()), 256);
  }

  void sha256MatchesQt() {
    QCOMPARE(util::sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(util::sha256Hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    for (size_t n : {55, 56, 63, 64, 65, 119, 120, 1000, 100000}) {
      std::string s(n, '\0');
      for (size_t i = 0; i < n; ++i) s[i] = char(i * 31 + 7);
      const QByteArray qt = QCryptographicHash::hash(QByteArray(s.data(), qsizetype(n)), QCryptographicHash::Sha256).toHex();
      QCOMPARE(util::sha256Hex(s), qt.toStdString());
    }
  }
};

QTEST_GUILESS_MAIN(TestBpeTrainer)
#include "test_bpe_trainer.moc"
