// A tokenizer trained by crosslab, loaded by an independent implementation: @lenml/tokenizers
// (a port of transformers.js, installed from npm by the npm_tokenizer fixture) must give the
// same ids as our BpeTokenizer on varied and unseen text. (Debian 12 has no python3-tokenizers.)
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/bpe_trainer.h"
#include "tests/tokenizer/trainer_texts.h"

using namespace crosslab;

class TestBpeTrainerJs : public QObject {
  Q_OBJECT

 private slots:
  void referenceLoaderGivesTheSameIds() {
    QTemporaryDir dir;
    tokenizer::BpeTrainerOptions o;
    o.vocabSize = 1024;
    tokenizer::trainByteLevelBpe(testing::trainerCorpus(), o).write(dir.path().toStdString());
    const auto tok = tokenizer::BpeTokenizer::load(dir.filePath("tokenizer.json").toStdString());

    auto texts = testing::probeTexts();
    for (const auto& t : testing::trainerCorpus()) texts.push_back(t);  // seen text too
    {
      std::ofstream corpus(dir.filePath("corpus.jsonl").toStdString(), std::ios::binary);
      for (const auto& t : texts) corpus << nlohmann::json(t).dump() << "\n";
    }
    QProcess node;
    node.start(NODE, {TOK_ANY_MJS, dir.path(), dir.filePath("corpus.jsonl"), dir.filePath("ids.jsonl")});
    QVERIFY(node.waitForFinished(120000));
    QVERIFY2(node.exitCode() == 0, node.readAllStandardError().constData());

    std::ifstream in(dir.filePath("ids.jsonl").toStdString());
    size_t n = 0, mismatches = 0;
    for (std::string line; std::getline(in, line); ++n) {
      QVERIFY(n < texts.size());
      const auto expected = nlohmann::json::parse(line).get<std::vector<int32_t>>();
      const auto ours = tok.encode(texts[n], {true, true});
      if (ours != expected && mismatches++ < 3) qWarning("line %zu differs: %s", n, texts[n].substr(0, 80).c_str());
    }
    QCOMPARE(n, texts.size());
    QCOMPARE(mismatches, size_t(0));
  }
};

QTEST_GUILESS_MAIN(TestBpeTrainerJs)
#include "test_bpe_trainer_js.moc"
