// Supervised encoding with the real Llama 3.1 tokenizer (npm fixture): the BpeTextEncoder
// adapter gives the ids of the JS reference tokenizer for the rendered llama3 template, the
// prompt is masked (-100) and the response plus <|eot_id|> are trained.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/train/bpe_text_encoder.h"
#include "core/train/sft_data.h"

using namespace crosslab;

class TestSftEncoding : public QObject {
  Q_OBJECT

 private slots:
  void maskingAndIdsMatchTheReferenceTokenizer() {
    const auto tok = tokenizer::BpeTokenizer::load(LLAMA3_TOKENIZER_JSON);
    const train::BpeTextEncoder enc(tok);
    QCOMPARE(enc.bosId(), 128000);
    train::Example ex;
    ex.system = "Answer from the contexts.";
    ex.messages = {{"user", "Which box ran out of memory?"}, {"assistant", "{\"answer\": \"box 7\"}"},
                   {"user", "And the price?"}, {"assistant", "$2.99/h"}};
    const auto e = train::encodeSupervised(ex, enc, 4096);

    // The reference tokenizes the whole rendered text at once (it adds <|begin_of_text|>).
    std::string text;
    for (const auto& t : train::llama3Turns(ex)) text += t.source + t.target;
    QTemporaryDir tmp;
    QFile corpus(tmp.filePath("corpus.jsonl"));
    QVERIFY(corpus.open(QIODevice::WriteOnly));
    corpus.write(QJsonDocument(QJsonArray{QString::fromStdString(text)}).toJson(QJsonDocument::Compact).mid(1).chopped(1) + "\n");
    corpus.close();
    QProcess node;
    node.start(NODE, {TOK_REF_MJS, corpus.fileName(), tmp.filePath("ids.jsonl")});
    QVERIFY(node.waitForFinished(120000));
    QVERIFY2(node.exitCode() == 0, node.readAllStandardError().constData());
    QFile idsFile(tmp.filePath("ids.jsonl"));
    QVERIFY(idsFile.open(QIODevice::ReadOnly));
    const QJsonArray ref = QJsonDocument::fromJson(idsFile.readAll().trimmed()).array();
    QCOMPARE(size_t(ref.size()), e.inputIds.size());
    for (size_t i = 0; i < e.inputIds.size(); ++i) QCOMPARE(e.inputIds[i], ref[int(i)].toInt());

    // Labels: -100 exactly on BOS + each turn's source, ids on each target (eot included).
    QCOMPARE(e.labels.size(), e.inputIds.size());
    size_t pos = 1;
    QCOMPARE(e.labels[0], train::kIgnoreIndex);
    for (const auto& t : train::llama3Turns(ex)) {
      const auto src = enc.encode(t.source), tgt = enc.encode(t.target);
      for (size_t i = 0; i < src.size(); ++i) QCOMPARE(e.labels[pos++], train::kIgnoreIndex);
      for (size_t i = 0; i < tgt.size(); ++i, ++pos) QCOMPARE(e.labels[pos], e.inputIds[pos]);
      QCOMPARE(e.labels[pos - 1], 128009);  // <|eot_id|> closes every response and is trained
    }
    QCOMPARE(pos, e.labels.size());
    // The assistant header tokens are special ids, not text pieces.
    QCOMPARE(e.inputIds[1], 128006);
  }
};

QTEST_GUILESS_MAIN(TestSftEncoding)
#include "test_sft_encoding.moc"
