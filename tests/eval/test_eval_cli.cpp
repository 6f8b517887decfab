// crosslab-cli eval … as a user runs it (child processes), with a stand-in judge/generator
// on loopback: the `eval check --json` contract, judge -> lab -> agreement -> export, and
// generate through the OpenAI-compatible client.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <nlohmann/json.hpp>

#include <fstream>

#include "core/store/lab_store.h"
#include "standin_judge.h"
#include "tests/serve/serve_fixture.h"

using nlohmann::json;

namespace {

using Result = crosslab::testing::CliResult;

Result cli(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return crosslab::testing::runCli(args, env);
}

void write(const QString& path, const std::string& text) {
  std::ofstream(path.toStdString(), std::ios::binary) << text;
}

std::string answer(std::vector<std::string> quotes) { return json{{"answer", "a"}, {"evidence", quotes}}.dump(); }

std::string line(const std::string& id, const std::string& model, const std::string& output) {
  return json{{"id", id}, {"model", model}, {"output", output}}.dump() + "\n";
}

}  // namespace

class TestEvalCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString eval_, outputs_;

 private slots:
  void initTestCase() {
    eval_ = tmp_.filePath("eval.jsonl");
    outputs_ = tmp_.filePath("outputs.jsonl");
    write(eval_, json{{"id", "q1"}, {"question", "How long?"}, {"contexts", {"The run took 111 steps over three epochs."}}}.dump() +
                     "\n" +
                     json{{"id", "q2"}, {"question", "Which gate?"}, {"contexts", {"The rebuilt gate reads grounded harder."}}}.dump() +
                     "\n");
    write(outputs_, line("q1", "small", answer({"the run took 111 steps"})) +
                        line("q2", "small", "```json\n" + answer({"reads grounded harder", "invented quote here"}) + "\n```") +
                        line("q1", "big", answer({"took 111 steps", ""})) + line("q2", "big", answer({}) + " trailing"));
  }

  void checkJsonContract() {
    auto r = cli({"eval", "check", "--eval", eval_, "--outputs", outputs_, "--json"});
    QCOMPARE(r.code, 0);
    const auto j = json::parse(r.out);
    QCOMPARE(j["eval_sha256"].get<std::string>().size(), size_t(64));
    const auto& s = j["models"]["small"];
    for (const char* key : {"samples", "json_valid", "json_fenced", "quotes", "exact", "fuzzy", "fabricated", "invalid", "fidelity"})
      QVERIFY2(s.contains(key), key);
    QCOMPARE(s["samples"].get<int>(), 2);
    QCOMPARE(s["json_valid"].get<int>(), 1);
    QCOMPARE(s["json_fenced"].get<int>(), 1);
    QCOMPARE(s["quotes"].get<int>(), 3);
    QCOMPARE(s["exact"].get<int>(), 1);  // "reads grounded harder"
    QCOMPARE(s["fuzzy"].get<int>(), 1);  // "the run took 111 steps": the context says "The run"
    QCOMPARE(s["fabricated"].get<int>(), 1);
    QVERIFY(j["rules"]["exact"].get<std::string>().find("letter case must match") != std::string::npos);
    const auto& b = j["models"]["big"];
    QCOMPARE(b["json_valid"].get<int>(), 1);
    QCOMPARE(b["quotes"].get<int>(), 1);
    QCOMPARE(b["invalid"].get<int>(), 1);
    QCOMPARE(b["fidelity"].get<double>(), 1.0);
    QVERIFY(!j.contains("samples"));
    r = cli({"eval", "check", "--eval", eval_, "--outputs", outputs_, "--json", "--detail"});
    const auto d = json::parse(r.out);
    QCOMPARE(d["samples"][0]["quotes"][0]["start"].get<int>(), 0);
    QCOMPARE(d["samples"][0]["quotes"][0]["end"].get<int>(), 22);
    QCOMPARE(d["samples"][0]["quotes"][0]["result"].get<std::string>(), std::string("fuzzy"));
    QCOMPARE(d["samples"][0]["quotes"][0]["normalized"], json({"letter case"}));
    QCOMPARE(d["samples"][1]["quotes"][0]["normalized"], json::array());  // verbatim
  }

  // The text report says what "exact" allows, and --detail what each match needed.
  void checkTextStatesTheRule() {
    auto r = cli({"eval", "check", "--eval", eval_, "--outputs", outputs_, "--detail"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("exact = a verbatim run of whole words in a context; only whitespace runs, Unicode form (NFC) and "
                            "curly quotes/dashes may differ, letter case must match"),
             r.out.constData());
    QVERIFY(r.out.contains("fuzzy = found with letter case ignored"));
    QVERIFY2(r.out.contains("\"the run took 111 steps\"  (letter case)"), r.out.constData());
    QVERIFY2(r.out.contains("\"reads grounded harder\"  (verbatim)"), r.out.constData());
  }

  void badInputIsOneLineAndExitOne() {
    const QString bad = tmp_.filePath("bad.jsonl");
    write(bad, "{\"id\": \"q1\"}\n");
    auto r = cli({"eval", "check", "--eval", eval_, "--outputs", bad});
    QCOMPARE(r.code, 1);
    QVERIFY(QString::fromUtf8(r.err).contains("bad.jsonl:1: missing \"model\""));
    QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);
    r = cli({"eval", "generate", "--eval", eval_, "--model", tmp_.path(), "--name", "x", "--out", tmp_.filePath("g.jsonl")});
    QCOMPARE(r.code, 1);  // a folder that is no model: one line naming what is missing, nothing written
    QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);
    QVERIFY(!QFile::exists(tmp_.filePath("g.jsonl")));
  }

  // eval generate through the local engine (a tiny checkpoint with its own tokenizer and a
  // LoRA adapter): one output per question, greedy so the same bytes twice, adapter applied.
  void generateWithTheLocalEngine() {
    const std::string model = tmp_.filePath("tiny-model").toStdString();
    crosslab::testing::writeServeFixture(model);
    const QString a = tmp_.filePath("local-a.jsonl"), b = tmp_.filePath("local-b.jsonl"), c = tmp_.filePath("local-c.jsonl");
    const QStringList base = {"eval", "generate", "--eval", eval_, "--model", QString::fromStdString(model), "--name", "tiny",
                              "--max-tokens", "8", "--out"};
    auto r = cli(base + QStringList{a, "--adapter", QString::fromStdString(model + "/lora_a")});
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli(base + QStringList{b, "--adapter", QString::fromStdString(model + "/lora_a")});
    QCOMPARE(r.code, 0);
    r = cli(base + QStringList{c});
    QCOMPARE(r.code, 0);
    QFile fa(a), fb(b), fc(c);
    QVERIFY(fa.open(QIODevice::ReadOnly) && fb.open(QIODevice::ReadOnly) && fc.open(QIODevice::ReadOnly));
    const QByteArray withAdapter = fa.readAll();
    QCOMPARE(withAdapter, fb.readAll());  // greedy: deterministic
    QVERIFY(withAdapter != fc.readAll());  // the adapter changes what the model writes
    const auto lines = withAdapter.trimmed().split('\n');
    QFile ev(eval_);
    QVERIFY(ev.open(QIODevice::ReadOnly));
    QCOMPARE(lines.size(), ev.readAll().trimmed().split('\n').size());
    for (const auto& line : lines) {
      const auto j = nlohmann::json::parse(line.toStdString());
      QCOMPARE(j["model"].get<std::string>(), std::string("tiny"));
      QVERIFY(j["output"].is_string());
    }
  }

  void judgeStoresVerdictsAndAgreementExports() {
    StandinJudge judge;
    const QString lab = tmp_.filePath("lab");
    QCOMPARE(cli({"lab", "init", lab}).code, 0);
    QCOMPARE(cli({"eval", "check", "--eval", eval_, "--outputs", outputs_, "--lab", lab}).code, 0);
    const QString gate = tmp_.filePath("gate.json");
    write(gate, json{{"name", "strict"}, {"checks", {2, 3, 4}}, {"rubric", "{{question}} {{contexts}} {{output}}"},
                     {"backoff_s", 0.01},
                     {"judges", {{{"name", "one"}, {"url", judge.url()}, {"model", "accept"}, {"api_key_env", "JUDGE_KEY"}},
                                 {{"name", "two"}, {"url", judge.url() + "/v1"}, {"model", "reject"}}}}}
                    .dump());
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("JUDGE_KEY", "sk-never-stored-42");
    auto r = cli({"eval", "judge", "--eval", eval_, "--outputs", outputs_, "--gate", gate, "--lab", lab, "--json",
                  "--published", "0.7"},
                 env);
    QCOMPARE(r.code, 0);
    QVERIFY2(!r.err.contains('\r') && r.err.contains("judged 4/4\n"), r.err.constData());  // whole lines off a terminal
    const auto j = json::parse(r.out);
    QCOMPARE(j["verdicts"]["small"]["reject"].get<int>(), 2);  // judge two rejects: no agreement, no accept
    QCOMPARE(judge.authorizations().front(), std::string("Bearer sk-never-stored-42"));
    QFile db(lab + "/lab.sqlite");
    QVERIFY(db.open(QIODevice::ReadOnly));
    QVERIFY(!db.readAll().contains("sk-never-stored-42"));

    r = cli({"eval", "agreement", "--lab", lab, "--json"});
    QCOMPARE(r.code, 0);
    const auto a = json::parse(r.out);
    QCOMPARE(a["models"]["small"]["format"]["accepted"].get<int>(), 2);
    QCOMPARE(a["models"]["small"]["gate:strict"]["accepted"].get<int>(), 0);
    QCOMPARE(a["models"]["small"]["judge:strict/one"]["accepted"].get<int>(), 2);
    bool sawPair = false;
    for (const auto& p : a["agreement"])
      if (p["a"] == "format" && p["b"] == "quotes") {
        sawPair = true;
        QCOMPARE(p["n"].get<int>(), 4);
      }
    QVERIFY(sawPair);
    QCOMPARE(a["calibration"][0]["published"].get<double>(), 0.7);
    QCOMPARE(a["calibration"][0]["measured"].get<double>(), 0.0);
    QVERIFY(a.contains("calibration_warning"));

    r = cli({"eval", "export", "--lab", lab, "--format", "csv"});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromUtf8(r.out).startsWith("sample_id,eval_sha256,question_id,model,format,gate:strict,"));
    r = cli({"eval", "export", "--lab", lab, "--format", "json", "--out", tmp_.filePath("export.json")});
    QCOMPARE(r.code, 0);
    std::ifstream in(tmp_.filePath("export.json").toStdString());
    const auto e = json::parse(in);
    QCOMPARE(e.size(), size_t(4));
    QCOMPARE(e[0]["verdicts"]["judge:strict/two"]["detail"]["replies"].size(), size_t(1));
  }

  // Every judge unreachable: the instrument did not measure. The reason on stderr, exit 1,
  // the lab's verdicts "not_measured", and the tables say "not measured", never 0%.
  void unreachableJudgesAreNotMeasuredNeverZeroPercent() {
    const QString lab = tmp_.filePath("lab-nowhere");
    QCOMPARE(cli({"lab", "init", lab}).code, 0);
    const QString gate = tmp_.filePath("nowhere-gate.json");
    write(gate, json{{"name", "nowhere"}, {"checks", {2, 3, 4}}, {"rubric", "{{question}} {{contexts}} {{output}}"},
                     {"backoff_s", 0.01}, {"http_retries", 0}, {"max_attempts", 1},
                     {"judges", {{{"name", "gone"}, {"url", "http://127.0.0.1:1"}, {"model", "accept"}}}}}
                    .dump());
    auto r = cli({"eval", "judge", "--eval", eval_, "--outputs", outputs_, "--gate", gate, "--lab", lab});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("judge gone: no answer for 4 of 4 requests"), r.err.constData());
    QVERIFY2(r.err.contains("no judge answered"), r.err.constData());
    QVERIFY2(r.out.contains("not measured under gate nowhere"), r.out.constData());
    QVERIFY2(!r.out.contains("0%"), r.out.constData());
    {
      auto store = crosslab::store::LabStore::open(lab.toStdString());
      QCOMPARE(store.db().scalarInt("SELECT count(*) FROM verdicts WHERE instrument = 'gate:nowhere' AND verdict = 'not_measured'"), 4);
      QCOMPARE(store.db().scalarInt("SELECT count(*) FROM verdicts WHERE instrument = 'judge:nowhere/gone' AND verdict = 'not_measured'"), 4);
    }
    r = cli({"eval", "agreement", "--lab", lab, "--json"});
    QCOMPARE(r.code, 0);
    const auto a = json::parse(r.out);
    QCOMPARE(a["models"]["small"]["gate:nowhere"]["total"].get<int>(), 0);
    QCOMPARE(a["models"]["small"]["gate:nowhere"]["not_measured"].get<int>(), 2);
    QVERIFY(a["models"]["small"]["gate:nowhere"]["rate"].is_null());
    r = cli({"eval", "agreement", "--lab", lab});
    QVERIFY2(r.out.contains("not measured"), r.out.constData());
  }

  void pairwiseJudgeExportsDpoPairs() {
    StandinJudge judge;
    const QString lab = tmp_.filePath("lab-pairs");
    QCOMPARE(cli({"lab", "init", lab}).code, 0);
    const QString outs = tmp_.filePath("pairs.jsonl");
    write(outs, line("q1", "x", "GOOD 111 steps") + line("q1", "y", "no idea") + line("q2", "x", "meh") +
                    line("q2", "y", "GOOD grounded"));
    const QString gate = tmp_.filePath("pair-gate.json");
    write(gate, json{{"name", "pair"}, {"mode", "pairwise"}, {"rubric", "{{question}} <<A>> {{output_a}} <<B>> {{output_b}}"},
                     {"judges", {{{"url", judge.url()}, {"model", "content"}}}}}
                    .dump());
    auto r = cli({"eval", "judge", "--eval", eval_, "--outputs", outs, "--gate", gate, "--lab", lab, "--json"});
    QCOMPARE(r.code, 0);
    const auto j = json::parse(r.out);
    QCOMPARE(j["verdicts"]["x vs y"]["x"].get<int>(), 1);
    QCOMPARE(j["verdicts"]["x vs y"]["y"].get<int>(), 1);
    r = cli({"eval", "export", "--lab", lab, "--format", "dpo", "--eval", eval_});
    QCOMPARE(r.code, 0);
    const auto first = json::parse(r.out.left(r.out.indexOf('\n')).toStdString());
    QCOMPARE(first["chosen"].get<std::string>(), std::string("GOOD 111 steps"));
    QCOMPARE(first["rejected"].get<std::string>(), std::string("no idea"));
    QCOMPARE(first["prompt"].get<std::string>(), std::string("How long?"));
  }

  void generateThroughOpenAiEndpoint() {
    StandinJudge server;
    const QString out = tmp_.filePath("gen.jsonl");
    const QString lab = tmp_.filePath("lab-gen");
    QCOMPARE(cli({"lab", "init", lab}).code, 0);
    auto r = cli({"eval", "generate", "--eval", eval_, "--url", QString::fromStdString(server.url()), "--served-model", "writer", "--name",
                  "tuned-8b", "--out", out, "--lab", lab});
    QCOMPARE(r.code, 0);
    QVERIFY2(!r.err.contains('\r') && r.err.contains("generated 2/2\n"), r.err.constData());
    r = cli({"eval", "check", "--eval", eval_, "--outputs", out, "--json"});
    const auto j = json::parse(r.out);
    QCOMPARE(j["models"]["tuned-8b"]["json_valid"].get<int>(), 2);
    QCOMPARE(j["models"]["tuned-8b"]["exact"].get<int>(), 2);
    auto store = crosslab::store::LabStore::open(lab.toStdString());  // the prompt template is recorded
    QCOMPARE(store.db().scalarInt("SELECT count(*) FROM samples WHERE model = 'tuned-8b' AND prompt_template LIKE '%{{question}}%'"), 2);
    // A failing endpoint writes nothing.
    const QString none = tmp_.filePath("none.jsonl");
    r = cli({"eval", "generate", "--eval", eval_, "--url", QString::fromStdString(server.url()), "--served-model", "missing", "--name", "m",
             "--out", none});
    QCOMPARE(r.code, 1);
    QVERIFY(!QFile::exists(none));
  }
};

QTEST_GUILESS_MAIN(TestEvalCli)
#include "test_eval_cli.moc"
