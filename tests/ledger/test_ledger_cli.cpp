// crosslab-cli ledger / friction / report as a user runs them: import (the issue's
// shape), refusals with line numbers, export as a fixed point, --json with the exact
// keys and hand-computed figures, spend and credits in the totals, the friction log.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "tests/eval/standin_judge.h"
#include "tests/support/cli_runner.h"

namespace {

// Life 1: $6/h (0.1 $/min), 30.5 min used -> 31 billed; a failed run 5 min, 5 min wait,
// a good run 10 min. Life 2: 10 minutes on a 60-minute minimum, no work.
const char* kLives =
    R"({"box": "BOX-1", "provider": "hotaisle", "gpu": "MI300X", "gpus": 1, "price_per_hour": 6.0, "min_minutes": 1,)"
    R"( "provisioned_at": "2026-01-04T10:00:00Z", "deleted_at": "2026-01-04T10:30:30Z",)"
    R"( "work": [{"kind": "train", "name": "8b-lora", "start": "2026-01-04T10:05:00Z", "end": "2026-01-04T10:10:00Z", "status": "failed"},)"
    R"( {"kind": "train", "name": "8b-lora", "start": "2026-01-04T10:15:00Z", "end": "2026-01-04T10:25:00Z", "status": "finished"}],)"
    R"( "transfers": [{"direction": "pull", "what": "weights", "bytes": 1000000000, "start": "2026-01-04T10:01:00Z", "end": "2026-01-04T10:03:00Z"}]})"
    "\n"
    R"({"box": "BOX-2", "provider": "hotaisle", "gpu": "MI300X", "gpus": 2, "price_per_hour": 3.0, "min_minutes": 60,)"
    R"( "provisioned_at": "2026-01-04T11:00:00Z", "deleted_at": "2026-01-04T11:10:00Z", "work": [], "transfers": []})"
    "\n";

}  // namespace

class TestLedgerCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  crosslab::testing::CliResult cli(const QStringList& args) {
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("CROSSLAB_HOME", tmp_.filePath("home"));
    return crosslab::testing::runCli(args, env);
  }
  QString write(const QString& name, const QByteArray& text) {
    QFile f(tmp_.filePath(name));
    f.open(QIODevice::WriteOnly);
    f.write(text);
    return f.fileName();
  }
  QString newLab(const QString& name) {
    const QString path = tmp_.filePath(name);
    const auto r = cli({"lab", "init", path});
    if (r.code != 0) qFatal("lab init failed: %s", r.err.constData());
    return path;
  }

 private slots:
  void importRefuseExportFixedPoint() {
    const QString lab = newLab("a");
    const QString lives = write("lives.jsonl", kLives);
    auto r = cli({"ledger", "import", lives, "--lab", lab});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.out.contains("imported 2 box lives"));
    // Importing the same lives again overlaps them: refused by line, nothing recorded.
    r = cli({"ledger", "import", lives, "--lab", lab});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("line 1: the life of BOX-1 overlaps") && r.err.contains("nothing was recorded"),
             r.err.constData());
    QByteArray bad = kLives;
    bad.replace(R"("gpus": 2)", R"("gpus": 2.5)");
    r = cli({"ledger", "import", write("bad.jsonl", bad), "--lab", newLab("bad")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("line 2: the life \"gpus\" is not a whole number"), r.err.constData());
    r = cli({"ledger", "--lab", tmp_.filePath("bad"), "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("lives").toArray().size(), 0);  // not even line 1

    r = cli({"ledger", "export", "--lab", lab});
    QCOMPARE(r.code, 0);
    const QByteArray first = r.out;
    QCOMPARE(first.count('\n'), 2);
    QVERIFY(first.startsWith(R"({"box":"BOX-1","provider":"hotaisle","gpu":"MI300X","gpus":1,"price_per_hour":6.0,)"));
    const QString lab2 = newLab("b");
    QCOMPARE(cli({"ledger", "import", write("first.jsonl", first), "--lab", lab2}).code, 0);
    r = cli({"ledger", "export", "--lab", lab2, "--out", tmp_.filePath("second.jsonl")});
    QCOMPARE(r.code, 0);
    QFile second(tmp_.filePath("second.jsonl"));
    QVERIFY(second.open(QIODevice::ReadOnly));
    QCOMPARE(second.readAll(), first);
  }

  void jsonHasTheExactKeysAndFigures() {
    const QString lab = newLab("j");
    QCOMPARE(cli({"ledger", "import", write("j.jsonl", kLives), "--lab", lab}).code, 0);
    QCOMPARE(cli({"ledger", "spend", "3", "--note", "judge + embeddings", "--lab", lab}).code, 0);
    QCOMPARE(cli({"ledger", "credit", "100", "--note", "vendor credit", "--lab", lab}).code, 0);
    QCOMPARE(cli({"ledger", "spend", "-1", "--lab", lab}).code, 2);
    const auto r = cli({"ledger", "--lab", lab, "--json"});
    QCOMPARE(r.code, 0);
    const auto root = QJsonDocument::fromJson(r.out).object();
    const auto lives = root.value("lives").toArray();
    QCOMPARE(lives.size(), 2);
    const QStringList lifeKeys = {"billed_minutes", "billed_usd", "box", "compute_minutes", "compute_usd",
                                  "debug_minutes", "debug_usd", "idle_minutes", "idle_usd", "min_minutes",
                                  "price_per_hour", "ratio", "staging_minutes", "staging_usd", "used_minutes"};
    QCOMPARE(lives[0].toObject().keys(), lifeKeys);
    const auto a = lives[0].toObject();
    QCOMPARE(a.value("box").toString(), QString("BOX-1"));
    QCOMPARE(a.value("used_minutes").toDouble(), 30.5);
    QCOMPARE(a.value("billed_minutes").toDouble(), 31.0);
    QCOMPARE(a.value("compute_minutes").toDouble(), 10.0);
    QCOMPARE(a.value("debug_minutes").toDouble(), 10.0);  // the failed run and the wait after it
    QCOMPARE(a.value("staging_minutes").toDouble(), 5.0);
    QCOMPARE(a.value("idle_minutes").toDouble(), 6.0);   // 5.5 after the last work + 0.5 of the last minute
    QCOMPARE(a.value("billed_usd").toDouble(), 3.1);
    QCOMPARE(a.value("compute_usd").toDouble(), 1.0);
    QCOMPARE(a.value("idle_usd").toDouble(), 0.6);
    QCOMPARE(a.value("ratio").toDouble(), 1.5);
    const auto b = lives[1].toObject();
    QVERIFY(b.value("ratio").isNull());
    QCOMPARE(b.value("billed_minutes").toDouble(), 60.0);
    QCOMPARE(b.value("idle_usd").toDouble(), 3.0);
    const auto t = root.value("totals").toObject();
    QStringList totalKeys = lifeKeys;
    totalKeys.removeAll("box");
    totalKeys.removeAll("min_minutes");
    totalKeys.removeAll("price_per_hour");
    totalKeys << "credit_usd" << "other_usd";
    totalKeys.sort();
    QCOMPARE(t.keys(), totalKeys);
    QCOMPARE(t.value("billed_usd").toDouble(), 6.1);
    QCOMPARE(t.value("billed_minutes").toDouble(), 91.0);
    QCOMPARE(t.value("ratio").toDouble(), 1.5);
    QCOMPARE(t.value("other_usd").toDouble(), 3.0);
    QCOMPARE(t.value("credit_usd").toDouble(), 100.0);
    // The table says the same, the lab's way.
    const auto table = cli({"ledger", "--lab", lab});
    QVERIFY2(table.out.contains("$3.10") && table.out.contains("8.3 MB/s"), table.out.constData());
  }

  void frictionAddListEdit() {
    const QString lab = newLab("f");
    auto r = cli({"friction", "add", "--lab", lab, "--title", "stale apt index blocked python3-venv", "--category",
                  "venue hygiene", "--minutes", "3", "--fix", "apt-get update"});
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli({"friction", "add", "--lab", lab, "--title", "gemma4 unknown to the stable image", "--category",
             "stack_lag", "--ecosystem-specific"});
    QCOMPARE(r.code, 0);
    QCOMPARE(cli({"friction", "add", "--lab", lab, "--title", "x", "--category", "bad luck"}).code, 2);
    QCOMPARE(cli({"friction", "add", "--lab", lab, "--category", "other"}).code, 2);  // no title
    r = cli({"friction", "edit", "2", "--lab", lab, "--ecosystem-specific", "no", "--category", "own_error"});
    QCOMPARE(r.code, 0);
    QCOMPARE(cli({"friction", "edit", "9", "--lab", lab, "--fix", "x"}).code, 1);
    QCOMPARE(cli({"friction", "edit", "1", "--lab", lab, "--minutes", "-4"}).code, 2);
    r = cli({"friction", "list", "--lab", lab, "--json"});
    QCOMPARE(r.code, 0);
    const auto entries = QJsonDocument::fromJson(r.out).array();
    QCOMPARE(entries.size(), 2);
    QCOMPARE(entries[0].toObject().value("category").toString(), QString("venue_hygiene"));
    QCOMPARE(entries[0].toObject().value("minutes").toDouble(), 3.0);  // the refused edit changed nothing
    QCOMPARE(entries[1].toObject().value("category").toString(), QString("own_error"));
    QCOMPARE(entries[1].toObject().value("ecosystem_specific").toBool(), false);
    r = cli({"friction", "list", "--lab", lab});
    QVERIFY2(r.out.contains("2 entries; 0 specific to a venue's ecosystem"), r.out.constData());
  }

  void judgeTokensAreBookedAsApiSpend() {
    // The judge gate books its token counts at the configured price: 2 questions × 1 judge,
    // each reply 100 prompt + 20 completion tokens (the stand-in's usage).
    StandinJudge judge;
    const QString lab = newLab("judge");
    const QString eval = write("eval.jsonl", R"({"id": "q1", "question": "How long?", "contexts": ["111 steps."]})"
                                             "\n"
                                             R"({"id": "q2", "question": "Which gate?", "contexts": ["The rebuilt one."]})"
                                             "\n");
    // Built with nlohmann (moc cannot read a raw string holding \" and would skip this file's class).
    const auto output = [](const char* id, const char* answer) {
      return nlohmann::json{{"id", id}, {"model", "m"}, {"output", nlohmann::json{{"answer", answer}}.dump()}}.dump() +
             "\n";
    };
    const QString outputs = write("outputs.jsonl", QByteArray::fromStdString(output("q1", "a") + output("q2", "b")));
    const QString gate = write("gate.json", QByteArray::fromStdString(
                                                nlohmann::json{{"name", "strict"},
                                                               {"checks", {2, 3, 4}},
                                                               {"rubric", "{{question}} {{contexts}} {{output}}"},
                                                               {"judges", {{{"name", "one"}, {"url", judge.url()}, {"model", "accept"}}}}}
                                                    .dump()));
    auto r = cli({"eval", "judge", "--eval", eval, "--outputs", outputs, "--gate", gate, "--lab", lab, "--json",
                  "--usd-per-m-input", "3", "--usd-per-m-output", "15"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto out = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(out.value("prompt_tokens").toInt(), 200);
    QCOMPARE(out.value("completion_tokens").toInt(), 40);
    r = cli({"ledger", "--lab", lab, "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("totals").toObject().value("other_usd").toDouble(),
             200 * 3e-6 + 40 * 15e-6);
    QCOMPARE(cli({"eval", "judge", "--eval", eval, "--outputs", outputs, "--gate", gate, "--usd-per-m-input", "3"}).code,
             2);  // a price books into a lab: without --lab it is a usage error
  }

  void reportUsage() {
    QCOMPARE(cli({"report", "--lab", newLab("r")}).code, 2);  // no --out
    QCOMPARE(cli({"report", "--lab", tmp_.filePath("r"), "--out", tmp_.filePath("o"), "--format", "pdf"}).code, 2);
  }
};

QTEST_GUILESS_MAIN(TestLedgerCli)
#include "test_ledger_cli.moc"
