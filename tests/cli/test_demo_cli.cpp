// `crosslab-cli demo TMP --quick` end to end: the lab and its data, a tokenizer.json our
// tokenizer loads, a base model that `model info` validates and `generate` runs, pretraining
// that lowered the loss, 30 eval samples in the store under the eval file's SHA-256, the
// LoRA run present exactly when the build has a `train` command; the same seed gives the
// same tokenizer and weights byte for byte; a rerun reuses the lab; bad paths fail cleanly.
#include <QCryptographicHash>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <nlohmann/json.hpp>

#include "core/store/lab_store.h"
#include "core/tokenizer/bpe_tokenizer.h"

using nlohmann::json;
using namespace crosslab;

namespace {

using Result = crosslab::testing::CliResult;

Result cli(const QStringList& args) { return crosslab::testing::runCli(args); }

QByteArray fileBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool buildHasTrainer() {
  const auto r = cli({"help"});
  return r.out.contains("\n  train ");
}

}  // namespace

class TestDemoCli : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString lab_;
  json report_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    lab_ = tmp_.filePath("lab one");
    const auto r = cli({"demo", lab_, "--quick", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    report_ = json::parse(r.out.toStdString());
    QVERIFY(r.err.contains("demo: pretrain"));  // progress lines for the GUI's dialog
    QVERIFY(r.err.contains("done in"));
  }

  void labAndDataExist() {
    QVERIFY(store::LabStore::isLab(lab_.toStdString()));
    QCOMPARE(report_["created"].get<bool>(), true);
    for (const char* f : {"data/demo_train.json", "data/dataset_info.json", "data/demo_eval.jsonl"})
      QVERIFY2(QFile::exists(lab_ + "/" + f), f);
    QCOMPARE(report_["train_examples"].get<int>(), 290);
    QCOMPARE(report_["eval_examples"].get<int>(), 30);
  }

  void tokenizerLoads() {
    const auto tok = tokenizer::BpeTokenizer::load((lab_ + "/models/demo-base/tokenizer.json").toStdString());
    QCOMPARE(tok.vocabSize(), report_["tokenizer"]["vocab_size"].get<int>());
    const std::string text = "Which box ran out of memory? {\"answer\": \"mi300x\"}";
    QCOMPARE(tok.decode(tok.encode(text)), std::string("<|begin_of_text|>") + text);
    QVERIFY(tok.tokenId("<|eot_id|>").has_value());
  }

  void modelLoadsAndGenerates() {
    const QString model = lab_ + "/models/demo-base";
    const auto info = cli({"model", "info", model, "--json"});
    QVERIFY2(info.code == 0, info.err.constData());
    const auto j = json::parse(info.out.toStdString());
    QCOMPARE(j["tie_word_embeddings"].get<bool>(), true);
    QVERIFY(j["kv_heads"].get<int>() < j["heads"].get<int>());  // GQA
    QCOMPARE(j["vocab_size"].get<int>(), report_["tokenizer"]["vocab_size"].get<int>());
    QCOMPARE(j["parameters"].get<int64_t>(), report_["base_model"]["parameters"].get<int64_t>());
    const auto gen = cli({"generate", "--model", model, "--prompt", "The box", "--max-tokens", "5", "--ignore-eos", "--json"});
    QVERIFY2(gen.code == 0, gen.err.constData());
    QCOMPARE(json::parse(gen.out.toStdString())["completion_tokens"].get<int>(), 5);
  }

  void pretrainingLoweredTheLoss() {
    const auto& p = report_["pretrain"];
    QVERIFY(p["steps"].get<int>() > 0);
    QVERIFY2(p["last_loss"].get<double>() < p["first_loss"].get<double>() - 0.5, p.dump().c_str());
  }

  void samplesRecorded() {
    const QByteArray sha = QCryptographicHash::hash(fileBytes(lab_ + "/data/demo_eval.jsonl"), QCryptographicHash::Sha256).toHex();
    QCOMPARE(report_["eval_sha256"].get<std::string>(), sha.toStdString());
    auto lab = store::LabStore::open(lab_.toStdString());
    auto st = lab.db().prepare("SELECT count(*), count(DISTINCT question_id) FROM samples WHERE model = 'demo-base' AND eval_sha256 = ?");
    st.bind(1, sha.toStdString());
    QVERIFY(st.step());
    QCOMPARE(st.int64(0), int64_t(30));
    QCOMPARE(st.int64(1), int64_t(30));
    // The printed validity count is the count over the recorded outputs.
    auto outs = lab.db().prepare("SELECT output FROM samples WHERE model = 'demo-base'");
    int valid = 0;
    while (outs.step()) {
      try {
        const auto j = json::parse(outs.text(0));
        valid += j.is_object() && j.contains("answer") && j["answer"].is_string() && j.contains("evidence") &&
                 j["evidence"].is_array();
      } catch (const json::exception&) {
      }
    }
    QCOMPARE(report_["base_eval"]["valid"].get<int>(), valid);
    QCOMPARE(report_["base_eval"]["json_valid"].get<std::string>(), std::to_string(valid) + "/30");
  }

  // After its evals the demo sweeps its model with the LoRA run's adapter through the real
  // server and client, merged and at run time, at concurrency 1, 4, 16: two benchmarks in the
  // lab, each with its levels' real requests, for the Benchmarks panel's first start.
  void benchmarkRecorded() {
    if (!buildHasTrainer()) QSKIP("no LoRA run, no benchmark");
    QVERIFY(report_["phases_s"].contains("benchmark"));
    auto lab = store::LabStore::open(lab_.toStdString());
    auto st = lab.db().prepare("SELECT id, label, model, command, ended_at FROM benchmarks ORDER BY id");
    std::vector<int64_t> ids;
    std::vector<std::string> labels;
    while (st.step()) {
      ids.push_back(st.int64(0));
      labels.push_back(st.text(1));
      QCOMPARE(st.text(2), std::string("demo-lora"));
      QVERIFY(st.text(3).find("crosslab-cli bench --url http://127.0.0.1:") == 0);
      // As many requests sent first and not measured as the widest level (16) runs at once: the
      // fresh server's first request and its KV rows' first writes are in none of the levels. The
      // quick demo's levels are counts of requests (no --duration), so its figures are fixed.
      const QString command = QString::fromStdString(st.text(3));
      QVERIFY2(QRegularExpression(" --warmup 16( |$)").match(command).hasMatch(), st.text(3).c_str());
      QVERIFY2(!command.contains("--duration"), st.text(3).c_str());
      QVERIFY(!st.text(4).empty());  // ended
    }
    QCOMPARE(ids.size(), size_t(2));
    QVERIFY2(labels[0].find("demo-lora merged") == 0, labels[0].c_str());
    QVERIFY2(labels[1].find("demo-lora runtime LoRA") == 0, labels[1].c_str());
    for (int64_t id : ids) {
      auto lv = lab.db().prepare("SELECT concurrency, completed, failed, output_throughput FROM benchmark_levels "
                                 "WHERE benchmark_id = ? ORDER BY concurrency");
      lv.bind(1, id);
      std::vector<int64_t> levels;
      while (lv.step()) {
        levels.push_back(lv.int64(0));
        QVERIFY(lv.int64(1) > 0);
        QCOMPARE(lv.int64(2), int64_t(0));
        QVERIFY(lv.real(3) > 0);
      }
      // 1, 4, 16 unless the sweep stopped early on a flagged collapse (a timing judgement).
      QVERIFY(!levels.empty() && levels[0] == 1);
      for (size_t i = 1; i < levels.size(); ++i) QCOMPARE(levels[i], i == 1 ? int64_t(4) : int64_t(16));
    }
  }

  void loraRunOnlyWithATrainer() {
    if (buildHasTrainer()) {
      QVERIFY(!report_["lora_run"].is_null());
      QCOMPARE(report_["lora_run"]["eval"]["total"].get<int>(), 30);
    } else {
      QVERIFY(report_["lora_run"].is_null());
    }
  }

  void sameSeedSameBytes() {
    const QString other = tmp_.filePath("lab two");
    const auto r = cli({"demo", other, "--quick", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "config.json", "model.safetensors"}) {
      const QByteArray a = fileBytes(lab_ + "/models/demo-base/" + f), b = fileBytes(other + "/models/demo-base/" + f);
      QVERIFY2(!a.isEmpty() && a == b, f);
    }
  }

  void rerunReusesTheLab() {
    const auto r = cli({"demo", lab_, "--quick", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(json::parse(r.out.toStdString())["created"].get<bool>(), false);
    auto lab = store::LabStore::open(lab_.toStdString());
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM samples WHERE model = 'demo-base'"), int64_t(30));  // replaced, not doubled
  }

  void badPathFailsWithOneLine() {
    const QString file = tmp_.filePath("a file");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("x");
    f.close();
    const auto r = cli({"demo", file, "--quick"});
    QCOMPARE(r.code, 1);
    const QByteArray last = r.err.trimmed().split('\n').last();
    QVERIFY2(last.startsWith("crosslab-cli demo: "), r.err.constData());
    QCOMPARE(fileBytes(file), QByteArray("x"));  // untouched
    QCOMPARE(cli({"demo"}).code, 2);
  }
};

QTEST_GUILESS_MAIN(TestDemoCli)
#include "test_demo_cli.moc"
