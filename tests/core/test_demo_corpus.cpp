// The demo corpus: deterministic, the lab's sizes, every evidence quote an exact substring
// of its contexts, answers that parse as the JSON contract, eval facts unseen in training,
// and files that the SFT loader and the eval format read back.
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "core/demo/demo_corpus.h"
#include "core/train/sft_data.h"

using namespace crosslab;

class TestDemoCorpus : public QObject {
  Q_OBJECT
 private slots:
  void deterministicAndSized() {
    const auto a = demo::makeDemoCorpus();
    const auto b = demo::makeDemoCorpus();
    QCOMPARE(a.train.size(), size_t(290));
    QCOMPARE(a.eval.size(), size_t(30));
    for (size_t i = 0; i < a.train.size(); ++i) {
      QCOMPARE(a.train[i].question, b.train[i].question);
      QCOMPARE(a.train[i].answerJson(), b.train[i].answerJson());
      QCOMPARE(a.train[i].contexts, b.train[i].contexts);
    }
    const auto other = demo::makeDemoCorpus(18);
    QVERIFY(other.train[0].question != a.train[0].question || other.train[0].contexts != a.train[0].contexts);
  }

  void quotesAreExactAndAnswersParse() {
    const auto c = demo::makeDemoCorpus();
    for (const auto* set : {&c.train, &c.eval}) {
      for (const auto& ex : *set) {
        QVERIFY(ex.contexts.size() >= 2 && ex.contexts.size() <= 4);
        const auto j = nlohmann::json::parse(ex.answerJson());
        QVERIFY(j["answer"].is_string() && !j["answer"].get<std::string>().empty());
        QVERIFY(j["evidence"].is_array() && !j["evidence"].empty());
        for (const auto& q : j["evidence"]) {
          const std::string quote = q.get<std::string>();
          QVERIFY2(std::any_of(ex.contexts.begin(), ex.contexts.end(),
                               [&](const std::string& ctx) { return ctx.find(quote) != std::string::npos; }),
                   quote.c_str());
        }
        QVERIFY(demo::demoUserPrompt(ex).find(ex.question) != std::string::npos);
      }
    }
  }

  void evalQuestionsAreNotTrainingQuestions() {
    const auto c = demo::makeDemoCorpus();
    std::set<std::string> train;
    for (const auto& ex : c.train) QVERIFY2(train.insert(ex.question).second, "a training question repeats");
    std::set<std::string> ids;
    for (const auto& ex : c.eval) {
      QVERIFY2(!train.count(ex.question), ex.question.c_str());
      QVERIFY(ids.insert(ex.id).second);
    }
  }

  void filesReadBack() {
    QTemporaryDir tmp;
    const auto c = demo::makeDemoCorpus();
    demo::writeDemoData(c, tmp.path().toStdString());
    const auto examples = train::loadDatasets(tmp.path().toStdString(), "demo");
    QCOMPARE(examples.size(), size_t(290));
    QCOMPARE(examples[0].system, demo::demoSystemPrompt());
    QCOMPARE(examples[0].messages[1].content, c.train[0].answerJson());
    std::ifstream in(tmp.filePath("demo_eval.jsonl").toStdString());
    int lines = 0;
    for (std::string line; std::getline(in, line); ++lines) {
      const auto j = nlohmann::json::parse(line);
      QVERIFY(j.contains("id") && j.contains("question") && j["contexts"].is_array() && j.contains("reference"));
    }
    QCOMPARE(lines, 30);
    QVERIFY(!QFile::exists(tmp.filePath("demo_train.json.tmp")));
  }
};

QTEST_GUILESS_MAIN(TestDemoCorpus)
#include "test_demo_corpus.moc"
