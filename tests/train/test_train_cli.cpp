// `crosslab-cli train` and `merge` on tiny random checkpoints (tests/model/tiny_llama) with
// a byte-level tokenizer: PEFT layout, events.jsonl, store rows, the trainer against an
// independent PyTorch reference (ref_lora_train.py), resume after SIGKILL, SIGTERM,
// merge equivalence, bad input.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <cmath>
#include <map>

#include "core/model/safetensors.h"
#include "core/store/lab_store.h"
#include "core/tokenizer/bpe_tokenizer.h"
#include "core/train/bpe_text_encoder.h"
#include "core/train/recipe.h"
#include "core/train/sft_data.h"
#include "tests/model/tiny_llama.h"
#include "tests/train/tiny_tokenizer.h"

namespace {

using Result = crosslab::testing::CliResult;

Result run(const QStringList& args) { return crosslab::testing::runCli(args); }

QList<QJsonObject> readEvents(const QString& file) {
  QList<QJsonObject> out;
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (!line.isEmpty()) out.append(QJsonDocument::fromJson(line).object());
  return out;
}

std::map<std::string, std::vector<float>> readAdapter(const QString& dir) {
  crosslab::model::SafetensorsFile f((dir + "/adapter_model.safetensors").toStdString());
  std::map<std::string, std::vector<float>> out;
  for (const auto& info : f.header().tensors) {
    const auto v = f.view(info);
    const float* p = reinterpret_cast<const float*>(v.data);
    out[info.name] = std::vector<float>(p, p + info.numel());
  }
  return out;
}

double maxAdapterDiff(const QString& a, const QString& b) {
  const auto x = readAdapter(a), y = readAdapter(b);
  if (x.size() != y.size() || x.empty()) return INFINITY;
  double m = 0;
  for (const auto& [name, v] : x) {
    const auto it = y.find(name);
    if (it == y.end() || it->second.size() != v.size()) return INFINITY;
    for (size_t i = 0; i < v.size(); ++i) m = std::max(m, double(std::fabs(v[i] - it->second[i])));
  }
  return m;
}

std::vector<float> readFloats(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray bytes = f.readAll();
  std::vector<float> v(size_t(bytes.size()) / 4);
  std::memcpy(v.data(), bytes.constData(), v.size() * 4);
  return v;
}

double maxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

}  // namespace

class TestTrainCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString model_, data_, lab_;

  QString path(const QString& name) const { return tmp_.filePath(name); }

  // Alpaca records: short byte-level questions and answers (a few dozen tokens each).
  void writeData(const QString& file, int n) {
    QJsonArray a;
    for (int i = 0; i < n; ++i)
      a.append(QJsonObject{{"instruction", QString("What is item %1?").arg(i)},
                           {"input", ""},
                           {"output", QString("Item %1 is a %2.").arg(i).arg(i % 2 ? "box" : "venue")}});
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(a).toJson());
  }

  QStringList trainArgs(const QString& out, const QString& data, int epochs) const {
    return {"train", "--model", model_, "--data", data, "--out", out, "--dtype", "f32", "--lora-rank", "4",
            "--lora-alpha", "8", "--learning-rate", "1e-2", "--per-device-train-batch-size", "2",
            "--gradient-accumulation-steps", "2", "--num-train-epochs", QString::number(epochs),
            "--logging-steps", "1", "--threads", "1"};
  }

  std::vector<crosslab::store::MetricRow> metrics(const QString& runDir) {
    auto store = crosslab::store::LabStore::open(lab_.toStdString());
    const auto row = store.runs().byDir(crosslab::store::normalRunDir(runDir.toStdString()));
    return row ? store.runs().metricsSince(row->id, -1) : std::vector<crosslab::store::MetricRow>{};
  }

  std::string runStatus(const QString& runDir) {
    auto store = crosslab::store::LabStore::open(lab_.toStdString());
    const auto row = store.runs().byDir(crosslab::store::normalRunDir(runDir.toStdString()));
    return row ? row->status : std::string("none");
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    model_ = path("model");
    QVERIFY(QDir().mkpath(model_));
    crosslab::testing::writeTinyLlama(model_.toStdString(), {});
    crosslab::testing::writeTinyTokenizer(model_.toStdString());
    data_ = path("data.json");
    writeData(data_, 8);
    lab_ = path("lab");
    crosslab::store::LabStore::create(lab_.toStdString(), "test");
  }

  // 8 examples / effective batch 4 = 2 steps per epoch, 2 epochs = 4 steps.
  void trainWritesPeftAdapterEventsAndStoreRows() {
    const QString out = path("run-basic");
    const auto r = run(trainArgs(out, data_, 2) << "--save-steps" << "2" << "--lab" << lab_);
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.out.contains("trained 4 steps"));

    QFile cfgFile(out + "/adapter_config.json");
    QVERIFY(cfgFile.open(QIODevice::ReadOnly));
    const QJsonObject cfg = QJsonDocument::fromJson(cfgFile.readAll()).object();
    QCOMPARE(cfg["peft_type"].toString(), QString("LORA"));
    QCOMPARE(cfg["task_type"].toString(), QString("CAUSAL_LM"));
    QCOMPARE(cfg["r"].toInt(), 4);
    QCOMPARE(cfg["lora_alpha"].toDouble(), 8.0);
    QCOMPARE(cfg["bias"].toString(), QString("none"));
    QCOMPARE(cfg["target_modules"].toArray().size(), 7);
    for (const char* key : {"lora_dropout", "use_rslora", "fan_in_fan_out", "modules_to_save", "base_model_name_or_path", "inference_mode"})
      QVERIFY2(cfg.contains(key), key);

    crosslab::model::SafetensorsFile st((out + "/adapter_model.safetensors").toStdString());
    QCOMPARE(int(st.header().tensors.size()), 2 * 7 * 2);  // layers × projections × {A, B}
    const auto shape = [&](const std::string& name) {
      const auto* info = st.find("base_model.model.model.layers." + name);
      return info && info->dtype == crosslab::model::DType::F32 ? info->shape : std::vector<int64_t>{};
    };
    QCOMPARE(shape("0.self_attn.q_proj.lora_A.weight"), (std::vector<int64_t>{4, 64}));
    QCOMPARE(shape("0.self_attn.q_proj.lora_B.weight"), (std::vector<int64_t>{64, 4}));
    QCOMPARE(shape("1.mlp.gate_proj.lora_B.weight"), (std::vector<int64_t>{96, 4}));
    QCOMPARE(shape("1.mlp.down_proj.lora_A.weight"), (std::vector<int64_t>{4, 96}));
    QCOMPARE(shape("1.mlp.down_proj.lora_B.weight"), (std::vector<int64_t>{64, 4}));
    const auto adapter = readAdapter(out);
    double bMax = 0;
    for (float x : adapter.at("base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight")) bMax = std::max(bMax, double(std::fabs(x)));
    QVERIFY2(bMax > 1e-4, "lora_B stayed at its zero init: nothing was trained");

    const auto events = readEvents(out + "/events.jsonl");
    QVERIFY(events.size() >= 6);
    QCOMPARE(events.first()["event"].toString(), QString("start"));
    QCOMPARE(events.last()["event"].toString(), QString("end"));
    QList<int> steps;
    const QRegularExpression timeText("^(\\d+ days?, )?\\d+:\\d\\d:\\d\\d$");
    for (const auto& e : events) {
      if (e["event"].toString() != "step") continue;
      steps.append(e["current_steps"].toInt());
      QCOMPARE(e["total_steps"].toInt(), 4);
      for (const char* key : {"loss", "lr", "epoch", "percentage", "throughput", "total_tokens"}) QVERIFY2(e.contains(key), key);
      QVERIFY(timeText.match(e["elapsed_time"].toString()).hasMatch());
      QVERIFY(timeText.match(e["remaining_time"].toString()).hasMatch());
    }
    QCOMPARE(steps, (QList<int>{1, 2, 3, 4}));
    QVERIFY(QFile::exists(out + "/recipe.json"));
    QVERIFY(QFile::exists(out + "/checkpoint-2/optimizer.safetensors"));
    QVERIFY(QFile::exists(out + "/checkpoint-4/trainer_state.json"));
    QVERIFY(!QFile::exists(out + "/checkpoint-2.tmp"));

    QCOMPARE(runStatus(out), std::string("finished"));
    const auto rows = metrics(out);
    QCOMPARE(int(rows.size()), 4);
    int i = 0;
    for (const auto& e : events) {
      if (e["event"].toString() != "step") continue;
      QCOMPARE(rows[size_t(i)].step, std::int64_t(i + 1));
      QVERIFY(rows[size_t(i)].loss && *rows[size_t(i)].loss == e["loss"].toDouble());
      ++i;
    }
  }

  // Steps 2..4 of our run recomputed by torch (PEFT LoRA, HF loss, clip, torch AdamW) from
  // our checkpoint-1: per-step loss and the final adapter must agree.
  void matchesPyTorchReference() {
    const QString data = path("ref-data.json"), out = path("run-ref");
    writeData(data, 6);
    // 6 examples, micro-batch 3 × accumulation 2 = every example every step (padding and
    // accumulation both exercised); cosine with one warmup step.
    QStringList args = trainArgs(out, data, 4);
    args << "--per-device-train-batch-size" << "3" << "--lr-scheduler-type" << "cosine" << "--warmup-ratio" << "0.25"
         << "--save-steps" << "1";
    const auto r = run(args);
    QVERIFY2(r.code == 0, r.err.constData());

    // The encoded examples, as the trainer saw them, for the reference.
    const auto tok = crosslab::tokenizer::BpeTokenizer::load((model_ + "/tokenizer.json").toStdString());
    const crosslab::train::BpeTextEncoder enc(tok);
    QJsonArray examples;
    for (const auto& ex : crosslab::train::loadDataFile(data.toStdString())) {
      const auto e = crosslab::train::encodeSupervised(ex, enc, 4096);
      QJsonArray ids, labels;
      for (auto id : e.inputIds) ids.append(int(id));
      for (auto l : e.labels) labels.append(int(l));
      examples.append(QJsonObject{{"input_ids", ids}, {"labels", labels}});
    }
    QFile ef(path("ref-examples.json"));
    QVERIFY(ef.open(QIODevice::WriteOnly));
    ef.write(QJsonDocument(examples).toJson());
    ef.close();
    const auto recipe = crosslab::train::loadRecipeFile((out + "/recipe.json").toStdString());
    QCOMPARE(recipe.totalSteps(6), std::int64_t(4));

    QProcess py;
    py.start(PYTHON3, {REF_LORA_TRAIN_PY, model_, out + "/checkpoint-1", ef.fileName(), out, "--lr", "1e-2", "--sched",
                       "cosine", "--warmup", QString::number(recipe.warmupSteps(6)), "--total", "4", "--max-grad-norm", "1.0"});
    QVERIFY(py.waitForFinished(300000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    const QJsonObject ref = QJsonDocument::fromJson(py.readAllStandardOutput()).object();
    const double adapterDiff = ref["max_diff"].toDouble(INFINITY);
    qInfo("adapter after steps 2..4: max |ours - torch| = %.3g (tolerance 1e-5)", adapterDiff);
    QVERIFY(adapterDiff <= 1e-5);
    const auto refLosses = ref["losses"].toObject();
    QCOMPARE(refLosses.size(), 3);
    for (const auto& e : readEvents(out + "/events.jsonl")) {
      if (e["event"].toString() != "step" || e["current_steps"].toInt() < 2) continue;
      const double ours = e["loss"].toDouble(), theirs = refLosses[QString::number(e["current_steps"].toInt())].toDouble();
      qInfo("step %d loss ours %.7f torch %.7f", e["current_steps"].toInt(), ours, theirs);
      QVERIFY(std::fabs(ours - theirs) <= 1e-5 * std::max(1.0, std::fabs(theirs)));
    }
  }

  // Killed with SIGKILL after a checkpoint, resumed: same adapter and same metrics rows as
  // an uninterrupted run.
  void resumeAfterSigkillIsExact() {
    const QString data = path("long-data.json");
    writeData(data, 64);  // 16 steps per epoch × 3 = 48 steps
    const QString full = path("run-full"), killed = path("run-killed");
    const auto r = run(trainArgs(full, data, 3) << "--save-steps" << "4" << "--lab" << lab_);
    QVERIFY2(r.code == 0, r.err.constData());

    QProcess p;
    crosslab::testing::startCli(p, trainArgs(killed, data, 3) << "--save-steps" << "4" << "--lab" << lab_);
    QVERIFY(p.waitForStarted());
    int killedAfter = -1;
    while (p.state() == QProcess::Running && killedAfter < 0) {
      for (const auto& e : readEvents(killed + "/events.jsonl"))
        if (e["event"].toString() == "checkpoint" && e["current_steps"].toInt() >= 8) killedAfter = e["current_steps"].toInt();
      if (killedAfter < 0) QThread::msleep(2);
    }
    p.kill();  // SIGKILL
    p.waitForFinished();
    QVERIFY2(killedAfter > 0 && killedAfter < 48, "the run ended before it could be killed");
    QCOMPARE(runStatus(killed), std::string("running"));
    // The killed trainer left its process record behind (a watcher tells it is gone) …
    QVERIFY(QFile::exists(killed + "/process.json"));

    const auto resumed = run(trainArgs(killed, data, 3) << "--save-steps" << "4" << "--lab" << lab_ << "--resume");
    QVERIFY2(resumed.code == 0, resumed.err.constData());
    QVERIFY(resumed.out.contains("resumed from step"));
    QVERIFY(!QFile::exists(killed + "/process.json"));  // … a trainer that ends removes its own
    const double diff = maxAdapterDiff(full, killed);
    qInfo("killed after checkpoint-%d, resumed: max |adapter diff| = %.3g", killedAfter, diff);
    QVERIFY(diff <= 1e-6);

    const auto a = metrics(full), b = metrics(killed);
    QCOMPARE(int(a.size()), 48);
    QCOMPARE(int(b.size()), 48);
    for (size_t i = 0; i < a.size(); ++i) {
      QCOMPARE(b[i].step, std::int64_t(i + 1));
      QCOMPARE(*b[i].loss, *a[i].loss);
      QCOMPARE(*b[i].lr, *a[i].lr);
      QCOMPARE(*b[i].epoch, *a[i].epoch);
      QCOMPARE(*b[i].tokens, *a[i].tokens);
    }
    QCOMPARE(runStatus(killed), std::string("finished"));
    QList<int> steps;
    for (const auto& e : readEvents(killed + "/events.jsonl"))
      if (e["event"].toString() == "step") steps.append(e["current_steps"].toInt());
    QCOMPARE(steps.size(), 48);
    for (int i = 0; i < steps.size(); ++i) QCOMPARE(steps[i], i + 1);
  }

  void sigtermCheckpointsAndStops() {
    const QString data = path("long-data.json"), out = path("run-term");
    QProcess p;
    crosslab::testing::startCli(p, trainArgs(out, data, 3) << "--lab" << lab_);
    QVERIFY(p.waitForStarted());
    bool stepped = false;
    while (p.state() == QProcess::Running && !stepped) {
      for (const auto& e : readEvents(out + "/events.jsonl")) stepped = stepped || e["event"].toString() == "step";
      if (!stepped) QThread::msleep(2);
    }
    p.terminate();  // SIGTERM
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QByteArray said = p.readAllStandardOutput();
    QVERIFY2(said.contains("stopped at step"), said.constData());
    QCOMPARE(runStatus(out), std::string("stopped"));
    const auto events = readEvents(out + "/events.jsonl");
    QCOMPARE(events.last()["message"].toString(), QString("stopped"));
    const int at = events.last()["current_steps"].toInt();
    QVERIFY(QFile::exists(out + QString("/checkpoint-%1/adapter_model.safetensors").arg(at)));
    const auto resumed = run(trainArgs(out, data, 3) << "--lab" << lab_ << "--resume");
    QVERIFY2(resumed.code == 0, resumed.err.constData());
    QCOMPARE(runStatus(out), std::string("finished"));
    QCOMPARE(int(metrics(out).size()), 48);
  }

  // merged logits = base + adapter (unmerged) logits.
  void mergeEqualsUnmergedAdapter() {
    const QString adapter = path("run-basic"), merged = path("merged");
    const auto m = run({"merge", "--model", model_, "--adapter", adapter, "--out", merged});
    QVERIFY2(m.code == 0, m.err.constData());
    QVERIFY(QFile::exists(merged + "/tokenizer.json"));
    QVERIFY(QFile::exists(merged + "/config.json"));
    const QString ids = "[256,87,104,97,116,32,105,115,260,10,73,116]";
    const auto dump = [&](const QStringList& extra, const QString& file) {
      const auto r = run(QStringList{"forward", "--ids", ids, "--dump-logits", file} + extra);
      return r.code == 0 ? readFloats(file) : std::vector<float>{};
    };
    const auto withAdapter = dump({"--model", model_, "--adapter", adapter}, path("a.f32"));
    const auto fromMerged = dump({"--model", merged}, path("m.f32"));
    const auto base = dump({"--model", model_}, path("b.f32"));
    const double d = maxDiff(withAdapter, fromMerged);
    qInfo("merged vs base+adapter logits: max diff %.3g (tolerance 1e-4); adapter moved logits by %.3g", d,
          maxDiff(withAdapter, base));
    QVERIFY(d <= 1e-4);
    QVERIFY(maxDiff(withAdapter, base) > 1e-3);
    // The independent reference applies the adapter unmerged (PEFT's lora.Linear).
    QProcess py;
    py.start(PYTHON3, {REF_LLAMA_PY, model_, ids, "--logits", path("ref.f32"), "--adapter", adapter});
    QVERIFY(py.waitForFinished(120000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    const double dRef = maxDiff(readFloats(path("ref.f32")), fromMerged);
    qInfo("merged vs reference unmerged base+adapter: max diff %.3g (tolerance 1e-4)", dRef);
    QVERIFY(dRef <= 1e-4);

    const auto bf = run({"merge", "--model", model_, "--adapter", adapter, "--out", path("merged-bf16"), "--dtype", "bf16"});
    QVERIFY2(bf.code == 0, bf.err.constData());
    const auto info = run({"model", "info", path("merged-bf16"), "--json"});
    QVERIFY(info.code == 0);
    QVERIFY(info.out.contains("\"BF16\""));
  }

  void bf16TrainingKeepsF32Adapter() {
    const QString out = path("run-bf16");
    QStringList args = trainArgs(out, data_, 1);
    args[args.indexOf("f32")] = "bf16";
    const auto r = run(args);
    QVERIFY2(r.code == 0, r.err.constData());
    crosslab::model::SafetensorsFile st((out + "/adapter_model.safetensors").toStdString());
    for (const auto& t : st.header().tensors) QVERIFY(t.dtype == crosslab::model::DType::F32);
    for (const auto& e : readEvents(out + "/events.jsonl"))
      if (e["event"].toString() == "step") QVERIFY(std::isfinite(e["loss"].toDouble()) && e["loss"].toDouble() > 0);
  }

  void badInputFailsWithOneLine() {
    QCOMPARE(run({"train", "--model", model_, "--data", data_}).code, 2);  // no --out
    QCOMPARE(run({"train", "--model", model_, "--data", data_, "--out", path("x"), "--lora-rank", "zero"}).code, 2);
    QFile bad(path("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("[{\"instruction\": ");
    bad.close();
    const auto r = run({"train", "--model", model_, "--data", bad.fileName(), "--out", path("run-bad")});
    QCOMPARE(r.code, 1);
    QCOMPARE(r.err.trimmed().count('\n'), 0);
    const auto m = run({"merge", "--model", model_, "--adapter", path("run-basic"), "--out", path("run-basic")});
    QCOMPARE(m.code, 1);
    QVERIFY(m.err.contains("not empty"));
  }

  // A run folder holds one run: training into it again without --resume is refused and
  // nothing of the first run changes (#11: New Run never overwrites an existing run).
  void aFolderThatHoldsARunIsNeverWrittenOver() {
    const QString out = path("run-basic");
    QFile events(out + "/events.jsonl");
    QVERIFY(events.open(QIODevice::ReadOnly));
    const QByteArray before = events.readAll();
    events.close();
    const auto r = run(trainArgs(out, data_, 1) << "--lab" << lab_);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("already holds a run") && r.err.contains("--resume"), r.err.constData());
    QVERIFY(events.open(QIODevice::ReadOnly));
    QCOMPARE(events.readAll(), before);
  }

  // The window's way: everything in one recipe file (model, data, run folder), and the
  // lab's row named by --run-id.
  void recipeFileAloneStartsARun() {
    const QString out = path("run-recipe");
    crosslab::train::Recipe r = crosslab::train::Recipe::labDefaults();
    r.modelPath = model_.toStdString();
    r.datasetFile = data_.toStdString();
    r.outputDir = out.toStdString();
    r.dtype = "f32";
    r.loraRank = 4;
    r.perDeviceTrainBatchSize = 2;
    r.gradientAccumulationSteps = 2;
    r.numTrainEpochs = 1;
    QDir().mkpath(out);
    QFile f(out + "/recipe.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(crosslab::train::recipeToJson(r)));
    f.close();
    auto lab = crosslab::store::LabStore::open(lab_.toStdString());
    crosslab::store::NewRun nr;
    nr.name = "from-the-window";
    nr.runDir = crosslab::store::normalRunDir(out.toStdString());
    const auto id = lab.runs().requestCreate(nr);
    const auto result = run({"train", "--recipe", out + "/recipe.json", "--lab", lab_, "--run-id", QString::number(id),
                             "--threads", "1"});
    QVERIFY2(result.code == 0, result.err.constData());
    const auto row = lab.runs().byId(id);
    QCOMPARE(row->status, std::string("finished"));
    QCOMPARE(row->lastStep.value_or(0), std::int64_t(2));
    QVERIFY(QFile::exists(out + "/adapter_model.safetensors"));
    const auto all = lab.runs().list();
    QCOMPARE(std::count_if(all.begin(), all.end(), [&](const auto& x) { return x.runDir == nr.runDir; }), 1L);  // one row
    QCOMPARE(run({"train", "--recipe", out + "/recipe.json", "--run-id", "1"}).code, 2);  // --run-id needs --lab
  }
};

QTEST_GUILESS_MAIN(TestTrainCli)
#include "test_train_cli.moc"
