// The demo's LoRA step, in-process with a stand-in `train` command (the real trainer lives
// on another branch): the demo finds `train` in the registry, calls it with the lab's model,
// data, dataset, run folder and the quick step cap, then evaluates the adapter as
// "demo-lora" next to the base and records both in the store. A failing trainer fails the
// demo with one line.
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "cli/command.h"
#include "cli/commands.h"
#include "core/store/lab_store.h"
#include "tests/model/tiny_llama.h"

using namespace crosslab;
using nlohmann::json;

namespace {

struct TrainCall {
  int calls = 0;
  std::map<std::string, std::string> values;
};

// `train` that writes a random PEFT adapter shaped for the quick demo model
// (demoModelSpec(true): hidden 64, intermediate 192, 2 layers, 4 heads, 2 KV heads).
cli::Command standInTrain(TrainCall& call, bool fail) {
  std::vector<cli::OptionSpec> opts;
  for (const char* o : {"--model", "--data", "--dataset", "--out", "--lab", "--seed", "--max-steps", "--threads"}) opts.push_back({o, true, ""});
  return {"train", "", "stand-in trainer", opts, [&call, fail](const cli::Args& args, cli::Context&) {
            ++call.calls;
            for (const char* o : {"--model", "--data", "--dataset", "--out", "--lab", "--seed", "--max-steps", "--threads"})
              call.values[o] = args.value(o).value_or("");
            if (fail) throw std::runtime_error("out of memory");
            testing::TinyLlamaSpec spec;
            spec.hidden = 64;
            spec.intermediate = 192;
            spec.layers = 2;
            spec.heads = 4;
            spec.kvHeads = 2;
            // alpha 64 (scaling 16): large enough that the merged adapter changes greedy answers.
            testing::writeTinyLora(*args.value("--out"), spec, 4, 64, false, 3);
            return 0;
          }};
}

int runDemo(TrainCall& call, bool fail, const std::string& lab, json& report, std::string& err) {
  std::vector<cli::Command> commands = {standInTrain(call, fail)};
  cli::addDemoCommand(commands);
  std::ostringstream out, errs;
  const int rc = cli::runCli(commands, {"demo", lab, "--quick", "--json"}, out, errs);
  err = errs.str();
  if (rc == 0) report = json::parse(out.str());
  return rc;
}

}  // namespace

class TestDemoLoraPath : public QObject {
  Q_OBJECT

 private slots:
  void trainsThroughTheRegistryAndEvaluatesTheAdapter() {
    QTemporaryDir tmp;
    const std::string lab = tmp.filePath("lab").toStdString();
    TrainCall call;
    json report;
    std::string err;
    QCOMPARE(runDemo(call, false, lab, report, err), 0);
    QCOMPARE(call.calls, 1);
    QCOMPARE(call.values["--model"], lab + "/models/demo-base");
    QCOMPARE(call.values["--data"], lab + "/data");
    QCOMPARE(call.values["--dataset"], std::string("demo"));
    QCOMPARE(call.values["--out"], lab + "/runs/demo-lora");
    QCOMPARE(call.values["--lab"], lab);
    QCOMPARE(call.values["--max-steps"], std::string("4"));
    QCOMPARE(call.values["--threads"], std::string("1"));  // the demo's own thread count, not all cores
    QVERIFY(!report["lora_run"].is_null());
    QCOMPARE(report["lora_run"]["eval"]["total"].get<int>(), 30);
    QVERIFY(report["phases_s"].contains("lora"));

    auto store = store::LabStore::open(lab);
    QCOMPARE(store.db().scalarInt("SELECT count(*) FROM samples WHERE model = 'demo-lora'"), int64_t(30));
    QCOMPARE(store.db().scalarInt("SELECT count(*) FROM samples WHERE model = 'demo-base'"), int64_t(30));
    // The adapter was merged: some answer differs from the base model's.
    const auto differing = store.db().scalarInt(
        "SELECT count(*) FROM samples a JOIN samples b ON a.question_id = b.question_id "
        "WHERE a.model = 'demo-base' AND b.model = 'demo-lora' AND a.output <> b.output");
    QVERIFY(differing > 0);
  }

  void aFailingTrainerFailsTheDemo() {
    QTemporaryDir tmp;
    TrainCall call;
    json report;
    std::string err;
    QCOMPARE(runDemo(call, true, tmp.filePath("lab").toStdString(), report, err), 1);
    QCOMPARE(call.calls, 1);
    QVERIFY2(err.find("crosslab-cli demo: the LoRA run failed (train exited 1)") != std::string::npos, err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestDemoLoraPath)
#include "test_demo_lora_path.moc"
