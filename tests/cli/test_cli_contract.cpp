// The command-line contract, walked over every command `crosslab-cli help` lists (one
// table, so a new command cannot skip it):
//   - `--help` and `-h` exit 0 and print the command's usage;
//   - a missing required option exits 2 with a line naming it, before anything is opened;
//   - an unknown option exits 2 naming it;
//   - every command that takes --json, run for real as a child process (a scratch lab, a
//     tiny model, loopback stand-ins for the judge, Hot Aisle and an OpenAI server),
//     prints JSON that parses.
// The usage walk runs the same runCli as crosslab-cli in this process (it is quick); the
// exit codes the issue found wrong and the JSON table run the real program.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "backends/bench/standin_server.h"
#include "cli/commands.h"
#include "hotaisle_standin.h"
#include "tests/eval/standin_judge.h"
#include "tests/model/tiny_llama.h"
#include "tests/support/cli_runner.h"
#include "tests/train/tiny_tokenizer.h"

using namespace crosslab;
using nlohmann::json;

namespace {

std::vector<std::string> words(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(path);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct InProcess {
  int code;
  std::string out, err;
};

InProcess inProcess(const std::vector<std::string>& argv) {
  std::ostringstream out, err;
  const int code = cli::runCli(cli::allCommands(), argv, out, err);
  return {code, out.str(), err.str()};
}

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

int lineCount(const QByteArray& s) { return s.trimmed().isEmpty() ? 0 : int(s.trimmed().count('\n')) + 1; }

void writeFile(const QString& path, const QByteArray& bytes) {
  QDir().mkpath(QFileInfo(path).path());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

// Commands whose --json output another suite already parses, with where (running them
// here again would only repeat minutes of work).
const std::map<std::string, std::string> kJsonCoveredElsewhere = {
    {"demo", "test_demo_cli: demo TMP --quick --json, report parsed and checked"},
};

}  // namespace

class TestCliContract : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString home_, lab_, model_, eval_, outputs_, gate_, recipe_, data_;
  HotAisleStandin hotaisle_;

  QProcessEnvironment env() const {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("CROSSLAB_HOME", home_);
    e.insert("HOTAISLE_API_KEY", HotAisleStandin::kKey);
    e.remove("SSH_AUTH_SOCK");
    return e;
  }
  testing::CliResult run(const QStringList& args) const { return testing::runCli(args, env()); }
  QStringList provider() const {
    return {"--provider", "hotaisle", "--api-url", QString::fromStdString(hotaisle_.baseUrl()), "--team", "lab"};
  }

 private slots:
  void initTestCase() {
    home_ = tmp_.filePath("home");
    QVERIFY(QDir().mkpath(home_));
    lab_ = tmp_.filePath("lab");
    model_ = tmp_.filePath("model");
    testing::TinyLlamaSpec spec;
    testing::writeTinyLlama(model_.toStdString(), spec);
    testing::writeTinyTokenizer(model_.toStdString());
    writeFile(model_ + "/tokenizer_config.json", "{}");  // a complete Hugging Face folder for preflight
    eval_ = tmp_.filePath("eval.jsonl");
    const json question = {{"id", "q1"}, {"question", "How long?"}, {"contexts", {"The run took 111 steps."}}};
    writeFile(eval_, QByteArray::fromStdString(question.dump() + "\n"));
    outputs_ = tmp_.filePath("outputs.jsonl");
    const json answer = {{"answer", "111"}, {"evidence", {"took 111 steps"}}};
    const json output = {{"id", "q1"}, {"model", "small"}, {"output", answer.dump()}};
    writeFile(outputs_, QByteArray::fromStdString(output.dump() + "\n"));
    recipe_ = tmp_.filePath("recipe.json");
    writeFile(recipe_, QByteArray::fromStdString(json{{"model", "/models/llama-3.1-8b"}, {"lora_rank", 16}}.dump()));
    data_ = tmp_.filePath("data.json");
    writeFile(data_, QByteArray::fromStdString(json::array({{{"instruction", "q"}, {"input", ""}, {"output", "a"}}}).dump()));
    QVERIFY(hotaisle_.start() > 0);
    hotaisle_.pollsUntilRunning = 1;
  }

  // Every command: --help / -h, a missing required option, an unknown option.
  void everyCommandKeepsTheUsageContract() {
    const auto commands = cli::allCommands();
    QVERIFY(commands.size() > 30);
    int withRequired = 0;
    for (const auto& c : commands) {
      const auto path = words(c.path);
      const QByteArray name = QByteArray::fromStdString(c.path);
      for (const char* help : {"--help", "-h"}) {
        auto argv = path;
        argv.push_back(help);
        const auto r = inProcess(argv);
        QVERIFY2(r.code == 0, name + " " + help);
        QVERIFY2(r.out.rfind("usage: crosslab-cli " + c.path, 0) == 0, r.out.c_str());
        QVERIFY2(r.err.empty(), r.err.c_str());
      }
      auto unknown = path;
      unknown.push_back("--no-such-option");
      auto r = inProcess(unknown);
      QVERIFY2(r.code == 2, name);
      QVERIFY2(firstLine(r.err) == "crosslab-cli " + c.path + ": unknown option --no-such-option", r.err.c_str());

      const auto required = std::find_if(c.options.begin(), c.options.end(), [](const cli::OptionSpec& o) { return o.required; });
      if (required == c.options.end()) continue;
      ++withRequired;
      r = inProcess(path);  // nothing given
      QVERIFY2(r.code == 2, name);
      QVERIFY2(firstLine(r.err) == "crosslab-cli " + c.path + ": " + required->name + " is required", r.err.c_str());
      QVERIFY2(r.err.find("\nusage: crosslab-cli " + c.path) != std::string::npos, r.err.c_str());
      QVERIFY2(r.out.empty(), r.out.c_str());
      // Its help says so.
      auto help = path;
      help.push_back("--help");
      QVERIFY2(inProcess(help).out.find(required->help + " (required)") != std::string::npos, name);
    }
    QVERIFY(withRequired >= 15);
  }

  // The usage errors the issue found reported as failures (exit 1), or reported after a
  // file, a key or a lab was already touched; as the real program runs them.
  void usageErrorsExitTwoBeforeAnythingElse() {
    struct Case {
      QStringList args;
      QByteArray names;  // the first line of stderr contains this
    };
    const QList<Case> cases = {
        {{"recipe", "show", "--lora-rank", "abc"}, "lora_rank"},
        {{"venues", "timeline", "X", "--add", "m", "--at", "yesterday"}, "--at"},
        {{"remote", "serve", "--box", "b", "--engine", "foo", "--model", "/m"}, "--engine must be one of"},
        {{"remote", "train", "--box", "b", "--engine", "foo", "--recipe", "r", "--data", "d"}, "--engine must be crosslab"},
        {{"eval", "check", "--eval", "x"}, "--outputs is required"},
        {{"venues", "provision"}, "choose an offer"},
        {{"venues", "provision", "--offer", "first"}, "--offer"},
        {{"train", "--model", "m", "--val-size", "lots"}, "--val-size"},
        {{"preflight", "--model", "m", "--recipe", "r.json"}, "--gpu-memory-gb"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--json", "--progress"}, "not both"},
    };
    for (const auto& c : cases) {
      auto e = env();
      e.remove("HOTAISLE_API_KEY");  // a usage error must not get as far as asking for a key
      const auto r = testing::runCli(c.args, e);
      QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
      const QByteArray first = r.err.left(r.err.indexOf('\n'));
      QVERIFY2(first.contains(c.names), r.err.constData());
      QVERIFY2(!r.err.contains("API key"), r.err.constData());
      QCOMPARE(lineCount(r.err), 2);  // the reason, then the usage line
    }
    // Nothing was opened: no home lab was created by any of them.
    QVERIFY(!QFile::exists(home_ + "/home/lab.sqlite"));
  }

  // The training benchmark program keeps the same contract (it aborted on --help, and
  // printed "-nan tokens/s" for a run no longer than its warm-up).
  void trainBenchUsage() {
#ifndef TRAIN_BENCH
    QSKIP("the benchmark programs are not built (CROSSLAB_BUILD_BENCH=OFF)");
#else
    auto r = testing::runProgram(TRAIN_BENCH, {"--help"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("usage: train_bench CKPT"));
    r = testing::runProgram(TRAIN_BENCH, {model_, "--steps", "2"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--steps needs a whole number in [3,"), r.err.constData());
    r = testing::runProgram(TRAIN_BENCH, {model_, "--frobnicate", "1"});
    QCOMPARE(r.code, 2);
    r = testing::runProgram(TRAIN_BENCH, {tmp_.filePath("no-such-model"), "--steps", "3", "--dtypes", "f32"});
    QCOMPARE(r.code, 1);
    QCOMPARE(lineCount(r.err), 1);
#endif
  }

  // Every command that takes --json, for real: stdout parses as JSON.
  void everyJsonOutputParses() {
    StandinJudge judge;
    writeFile(tmp_.filePath("gate.json"),
              QByteArray::fromStdString(json{{"name", "g"}, {"checks", {2, 3, 4}}, {"rubric", "{{question}} {{contexts}} {{output}}"},
                                             {"judges", {{{"url", judge.url()}, {"model", "accept"}}}}}
                                            .dump()));
    backends::StandinConfig benchCfg;
    backends::StandinServer bench(benchCfg);
    bench.start();
    QCOMPARE(run({"box", "add", "loop", "--host", "127.0.0.1", "--port", "1", "--user", "u"}).code, 0);

    QString vm;  // the VM `venues provision` rents, for state and delete
    struct Entry {
      std::function<QStringList()> args;
      int code = 0;
    };
    const std::map<std::string, Entry> table = {
        {"lab init", {[&] { return QStringList{"lab", "init", lab_, "--json"}; }}},
        {"lab info", {[&] { return QStringList{"lab", "info", lab_, "--json"}; }}},
        {"detokenize", {[&] { return QStringList{"detokenize", "--model", model_, "[72, 105]", "--json"}; }}},
        {"generate",
         {[&] { return QStringList{"generate", "--model", model_, "--prompt", "hi", "--max-tokens", "2", "--json"}; }}},
        {"model info", {[&] { return QStringList{"model", "info", model_, "--json"}; }}},
        {"eval check",
         {[&] { return QStringList{"eval", "check", "--eval", eval_, "--outputs", outputs_, "--lab", lab_, "--json"}; }}},
        {"eval judge",
         {[&] {
           return QStringList{"eval", "judge", "--eval", eval_, "--outputs", outputs_, "--gate", tmp_.filePath("gate.json"),
                              "--lab", lab_, "--json"};
         }}},
        {"eval agreement", {[&] { return QStringList{"eval", "agreement", "--lab", lab_, "--json"}; }}},
        {"venues offers", {[&] { return QStringList{"venues", "offers"} + provider() + QStringList{"--json"}; }}},
        {"venues provision",
         {[&] { return QStringList{"venues", "provision"} + provider() + QStringList{"--offer", "0", "--poll-ms", "10", "--json"}; }}},
        {"venues state", {[&] { return QStringList{"venues", "state", vm} + provider() + QStringList{"--json"}; }}},
        {"venues delete", {[&] { return QStringList{"venues", "delete", vm} + provider() + QStringList{"--json"}; }}},
        {"venues list", {[&] { return QStringList{"venues", "list", "--all", "--json"}; }}},
        {"venues ladder", {[&] { return QStringList{"venues", "ladder", "--json"}; }}},
        {"venues timeline", {[&] { return QStringList{"venues", "timeline", "hotaisle", "--json"}; }}},
        {"box list", {[&] { return QStringList{"box", "list", "--json"}; }}},
        {"remote train",
         {[&] {
           return QStringList{"remote", "train", "--box",  "loop",    "--engine", "llamafactory", "--recipe",
                              recipe_,  "--data", data_, "--dry-run", "--json"};
         }}},
        {"preflight", {[&] { return QStringList{"preflight", "--model", model_, "--json"}; }}},
        {"version", {[&] { return QStringList{"version", "--json"}; }}},
        {"bench",
         {[&] {
           return QStringList{"bench", "--url", QString::fromStdString(bench.baseUrl()), "--model", "standin", "--concurrency",
                              "1", "--num-prompts", "2", "--output-len", "4", "--lab", lab_, "--json"};
         }}},
        {"ledger", {[&] { return QStringList{"ledger", "--lab", lab_, "--json"}; }}},
        {"friction list", {[&] { return QStringList{"friction", "list", "--lab", lab_, "--json"}; }}},
    };
    // The order matters where one command uses what another made (the lab, the VM).
    const std::vector<std::string> order = {"lab init",  "lab info",         "version",      "detokenize",  "generate",
                                            "model info", "eval check",      "eval judge",   "eval agreement",
                                            "venues offers", "venues provision", "venues state", "venues delete",
                                            "venues list", "venues ladder",  "venues timeline", "box list",
                                            "remote train", "preflight",     "bench",        "ledger",
                                            "friction list"};
    QCOMPARE(order.size(), table.size());
    std::set<std::string> takesJson;
    for (const auto& c : cli::allCommands())
      for (const auto& o : c.options)
        if (o.name == "--json") takesJson.insert(c.path);
    for (const auto& path : takesJson)
      QVERIFY2(table.count(path) || kJsonCoveredElsewhere.count(path),
               ("'" + path + "' takes --json but this table does not run it").c_str());
    for (const auto& [path, entry] : table) QVERIFY2(takesJson.count(path), ("'" + path + "' has no --json").c_str());

    for (const auto& path : order) {
      const auto& entry = table.at(path);
      const QStringList args = entry.args();
      const auto r = run(args);
      QVERIFY2(r.code == entry.code, qPrintable(args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
      QJsonParseError pe{};
      const auto doc = QJsonDocument::fromJson(r.out, &pe);
      QVERIFY2(pe.error == QJsonParseError::NoError && !doc.isNull(), qPrintable(args.join(' ') + " printed: " + r.out));
      if (path == "venues provision") vm = doc.object().value("name").toString();
    }
    QVERIFY(!vm.isEmpty());
    // A complete model: preflight says so in words too (it once printed nothing at all).
    const auto r = run({"preflight", "--model", model_});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("preflight passed for " + model_.toUtf8()), r.out.constData());
  }
};

QTEST_GUILESS_MAIN(TestCliContract)
#include "test_cli_contract.moc"
