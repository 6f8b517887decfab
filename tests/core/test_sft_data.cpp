// SFT data as LLaMA-Factory reads it: alpaca/sharegpt, dataset_info.json, JSON and JSON
// Lines, the llama3 template text, prompt masking and LLaMA-Factory's truncation.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "core/train/sft_data.h"

namespace tr = crosslab::train;

namespace {

// A byte-level encoder with Llama 3's special-token ids: one id per byte, special tokens
// recognised in the text. Lengths are easy to reason about, which is what these tests need;
// the real tokenizer's ids are tested with the engine.
class ByteEncoder : public tr::TextEncoder {
 public:
  std::vector<std::int32_t> encode(const std::string& text) const override {
    static const std::vector<std::pair<std::string, std::int32_t>> specials = {
        {"<|begin_of_text|>", 128000}, {"<|start_header_id|>", 128006}, {"<|end_header_id|>", 128007}, {"<|eot_id|>", 128009}};
    std::vector<std::int32_t> ids;
    for (size_t i = 0; i < text.size();) {
      bool matched = false;
      for (const auto& [s, id] : specials) {
        if (text.compare(i, s.size(), s) == 0) {
          ids.push_back(id);
          i += s.size();
          matched = true;
          break;
        }
      }
      if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
    }
    return ids;
  }
  std::int32_t bosId() const override { return 128000; }
};

void write(const QString& path, const std::string& text) { std::ofstream(path.toStdString(), std::ios::binary) << text; }

}  // namespace

class TestSftData : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void alpacaRecords() {
    write(tmp_.filePath("a.json"), R"([
      {"instruction": "Which box?", "input": "Context: BOX-1 costs $2.99/h.", "output": "BOX-1", "system": "Answer in JSON."},
      {"instruction": "Q2", "input": "", "output": "A2", "history": [["q0", "a0"]]}
    ])");
    const auto ex = tr::loadDataFile(tmp_.filePath("a.json").toStdString());
    QCOMPARE(ex.size(), size_t(2));
    QCOMPARE(ex[0].system, std::string("Answer in JSON."));
    QCOMPARE(ex[0].messages[0].content, std::string("Which box?\nContext: BOX-1 costs $2.99/h."));
    QCOMPARE(ex[0].messages[1].content, std::string("BOX-1"));
    QCOMPARE(ex[1].messages.size(), size_t(4));  // history first
    QCOMPARE(ex[1].messages[0].content, std::string("q0"));
    QCOMPARE(ex[1].messages[2].content, std::string("Q2"));
  }

  void shareGptThroughDatasetInfoWithCustomTags() {
    const QString dir = tmp_.filePath("data");
    QDir().mkpath(dir);
    write(dir + "/chat.jsonl",
          "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"hi\"}, "
          "{\"role\": \"assistant\", \"content\": \"hello\"}]}\n\n"
          "{\"messages\": [{\"role\": \"user\", \"content\": \"u1\"}, {\"role\": \"assistant\", \"content\": \"a1\"}, "
          "{\"role\": \"user\", \"content\": \"u2\"}, {\"role\": \"assistant\", \"content\": \"a2\"}]}\n");
    write(dir + "/alp.json", R"([{"instruction": "x", "output": "y"}])");
    write(dir + "/dataset_info.json", R"({
      "chat": {"file_name": "chat.jsonl", "formatting": "sharegpt",
               "columns": {"messages": "messages"},
               "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                        "assistant_tag": "assistant", "system_tag": "system"}},
      "alp": {"file_name": "alp.json"}
    })");
    const auto ex = tr::loadDatasets(dir.toStdString(), "chat, alp");
    QCOMPARE(ex.size(), size_t(3));
    QCOMPARE(ex[0].system, std::string("S"));
    QCOMPARE(ex[0].messages.size(), size_t(2));
    QCOMPARE(ex[1].messages.size(), size_t(4));
    QCOMPARE(ex[2].messages[1].content, std::string("y"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tr::loadDatasets(dir.toStdString(), "nope"));
  }

  void badRecordsNameTheirPlace_data() {
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("expected");
    QTest::newRow("bad line") << "{\"instruction\": \"a\", \"output\": \"b\"}\n{oops\n" << "line 2";
    QTest::newRow("no output") << "[{\"instruction\": \"a\"}]" << "record 1";
    QTest::newRow("wrong type") << "[{\"instruction\": 3, \"output\": \"b\"}]" << "'instruction' is not text";
    QTest::newRow("role order") << "[{\"conversations\": [{\"from\": \"gpt\", \"value\": \"x\"}]}]" << "expected 'human'";
    QTest::newRow("ends on user") << "[{\"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]}]" << "end with the assistant";
    QTest::newRow("empty") << "  \n" << "no records";
  }
  void badRecordsNameTheirPlace() {
    QFETCH(QString, content);
    QFETCH(QString, expected);
    write(tmp_.filePath("bad.jsonl"), content.toStdString());
    try {
      tr::loadDataFile(tmp_.filePath("bad.jsonl").toStdString());
      QFAIL("bad data accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
      QVERIFY(QString(e.what()).contains("bad.jsonl"));
    }
  }

  void llama3TemplateText() {
    tr::Example ex{"SYS", {{"user", "u1"}, {"assistant", "a1"}, {"user", "u2"}, {"assistant", "a2"}}};
    const auto turns = tr::llama3Turns(ex);
    QCOMPARE(turns.size(), size_t(2));
    QCOMPARE(turns[0].source, std::string("<|start_header_id|>system<|end_header_id|>\n\nSYS<|eot_id|>"
                                          "<|start_header_id|>user<|end_header_id|>\n\nu1<|eot_id|>"
                                          "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    QCOMPARE(turns[0].target, std::string("a1<|eot_id|>"));
    QCOMPARE(turns[1].source, std::string("<|start_header_id|>user<|end_header_id|>\n\nu2<|eot_id|>"
                                          "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    QCOMPARE(tr::llama3Prompt(ex), turns[0].source + "a1<|eot_id|>" + turns[1].source);
  }

  void promptMaskedResponseAndEotTrained() {
    ByteEncoder enc;
    tr::Example ex{"", {{"user", "hi"}, {"assistant", "ok"}}};
    const auto e = tr::encodeSupervised(ex, enc, 4096);
    // BOS + <sh>user<eh>\n\nhi<eot><sh>assistant<eh>\n\n  then  o k <eot>
    const std::vector<std::int32_t> source = {128000, 128006, 'u', 's', 'e', 'r', 128007, '\n', '\n', 'h', 'i', 128009,
                                              128006, 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', 128007, '\n', '\n'};
    std::vector<std::int32_t> ids = source;
    ids.insert(ids.end(), {'o', 'k', 128009});
    QCOMPARE(e.inputIds, ids);
    std::vector<std::int32_t> labels(source.size(), tr::kIgnoreIndex);
    labels.insert(labels.end(), {'o', 'k', 128009});
    QCOMPARE(e.labels, labels);
    QCOMPARE(e.trainedTokens(), 3);
  }

  void everyAssistantTurnTrained() {
    ByteEncoder enc;
    tr::Example ex{"", {{"user", "a"}, {"assistant", "bb"}, {"user", "c"}, {"assistant", "ddd"}}};
    const auto e = tr::encodeSupervised(ex, enc, 4096);
    QCOMPARE(e.trainedTokens(), 3 + 4);  // each target + its <|eot_id|>
    QCOMPARE(e.inputIds.size(), e.labels.size());
    QCOMPARE(e.inputIds.front(), 128000);
    QCOMPARE(e.labels.back(), 128009);
  }

  void inferSeqlenMatchesLlamaFactory_data() {
    QTest::addColumn<int>("s");
    QTest::addColumn<int>("t");
    QTest::addColumn<int>("cutoff");
    QTest::addColumn<int>("newS");
    QTest::addColumn<int>("newT");
    QTest::newRow("fits") << 10 << 5 << 100 << 10 << 5;
    QTest::newRow("truncate source") << 100 << 10 << 50 << 40 << 10;
    QTest::newRow("truncate target") << 10 << 100 << 50 << 10 << 40;
    QTest::newRow("truncate both") << 60 << 40 << 50 << 30 << 20;
    QTest::newRow("nothing left") << 5 << 5 << 0 << 0 << 0;
  }
  void inferSeqlenMatchesLlamaFactory() {
    QFETCH(int, s);
    QFETCH(int, t);
    QFETCH(int, cutoff);
    QFETCH(int, newS);
    QFETCH(int, newT);
    const auto [a, b] = tr::inferSeqlen(s, t, cutoff);
    QCOMPARE(a, newS);
    QCOMPARE(b, newT);
  }

  void truncatedToCutoff() {
    ByteEncoder enc;
    tr::Example ex{"", {{"user", std::string(300, 'q')}, {"assistant", std::string(40, 'r')}, {"user", "x"}, {"assistant", "y"}}};
    const auto e = tr::encodeSupervised(ex, enc, 64);
    QCOMPARE(e.inputIds.size(), size_t(64));  // the first turn fills the cutoff; the second is dropped
    // source 323 tokens, target 41: both are cut, the target to int(64 * 41 / 364) = 7.
    QCOMPARE(e.trainedTokens(), 7);
  }
};

QTEST_GUILESS_MAIN(TestSftData)
#include "test_sft_data.moc"
