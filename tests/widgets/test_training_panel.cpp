// The Training panel offscreen: a run appears, its curve grows while metrics arrive, a
// failed run turns red with its reason, runs compare, the chart coalesces and decimates,
// the New Run form validates and previews, Start/Stop drive a real child process, and the
// dead-run watchdog: a real `crosslab-cli train` child SIGKILLed, children printing each
// error form, a silent child, and a store row whose trainer process is gone.
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTemporaryDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtCharts/QLogValueAxis>
#include <QtTest>
#include <csignal>
#include <filesystem>
#include <thread>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/train/run_process.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "widgets/runs_model.h"
#include "widgets/training_panel.h"
#include "tests/model/tiny_llama.h"
#include "tests/train/tiny_tokenizer.h"

using namespace crosslab;
using widgets::LossChart;
using widgets::RunsModel;

namespace {
std::vector<store::MetricRow> rows(int from, int to) {
  std::vector<store::MetricRow> out;
  for (int s = from; s <= to; ++s) {
    store::MetricRow r;
    r.step = s;
    r.loss = 1.0 / s;
    r.lr = 1e-4;
    r.epoch = s / 37.0;
    out.push_back(r);
  }
  return out;
}
}  // namespace

class TestTrainingPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int labNo_ = 0;

  // A fresh lab per test, opened in a session.
  std::unique_ptr<backends::LabSession> openLab() {
    const QString dir = tmp_.filePath(QString("lab%1").arg(++labNo_));
    auto session = std::make_unique<backends::LabSession>();
    QString error;
    if (!session->requestCreate(dir, "t", &error)) qFatal("%s", qPrintable(error));
    return session;
  }

  // The store row of a run folder (as the trainer spells it), or a default row.
  static store::RunSummary rowOf(backends::LabSession* session, const QString& runDir) {
    const std::string dir = std::filesystem::absolute(runDir.toStdString()).lexically_normal().string();
    for (const auto& r : session->store()->runSummaries())
      if (r.runDir == dir) return r;
    return {};
  }

  // A watchdog with short thresholds, for children that are not our trainer.
  static widgets::LocalRunWatch::Options quickWatch(double stallSeconds) {
    widgets::LocalRunWatch::Options o;
    o.monitor.stallFloorSeconds = stallSeconds;
    o.monitor.startupGraceSeconds = stallSeconds;
    o.tickMs = 100;
    return o;
  }

  // Fake trainer children: `sh -c SCRIPT train … --out RUN_DIR --lab LAB` (the panel
  // reads --out/--lab; the script ignores them). RUN_DIR is "$4" inside the script.
  QStringList fakeArgs(backends::LabSession* session, const QString& runDir, const QString& script) {
    return {"-c", script, "train", "--model", "/models/fake", "--out", runDir, "--lab", session->path()};
  }

 private slots:
  void runAppearsAndCurveGrows() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    QCOMPARE(panel.runsModel()->rowCount(), 0);
    QVERIFY(panel.statusText().contains("No training runs"));
    auto* lab = session->store();
    const auto run = lab->addRun({"8b-lora", "train", "crosslab", "Llama-3.1-8B", 111, "", ""});
    panel.poll();
    QCOMPARE(panel.runsModel()->rowCount(), 1);
    QCOMPARE(panel.runsModel()->index(0, RunsModel::Name).data().toString(), QString("8b-lora"));
    panel.selectRun(run);
    QCOMPARE(panel.chart()->runs(), QList<qint64>{run});

    lab->appendMetrics(run, rows(1, 5));
    panel.poll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 5);
    lab->appendMetrics(run, rows(6, 9));  // more events arrive: the curve grows, nothing doubles
    panel.poll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 9);
    QCOMPARE(panel.chart()->plottedLossPoints(run), 9);
    QCOMPARE(panel.runsModel()->index(0, RunsModel::Steps).data().toString(), QString("9 / 111"));
    QVERIFY(panel.statusText().contains("step 9 of 111"));
  }

  void failedRunTurnsRedWithReason() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    const auto run = session->store()->addRun({"70b", "train", "llamafactory", "70B", 111, "", ""});
    session->store()->appendMetrics(run, rows(1, 3));
    session->store()->setRunStatus(run, "failed", "HIP out of memory. Tried to allocate 2.00 GiB");
    panel.poll();
    const QModelIndex status = panel.runsModel()->index(0, RunsModel::Status);
    QCOMPARE(status.data().toString(), QString("failed"));
    QCOMPARE(status.data(Qt::ForegroundRole).value<QBrush>().color(), QColor("#d32f2f"));
    QVERIFY(status.data(Qt::ToolTipRole).toString().contains("HIP out of memory"));
    panel.selectRun(run);
    QVERIFY(panel.statusText().contains("HIP out of memory"));
    QVERIFY(panel.findChild<QLabel*>("runStatus")->styleSheet().contains("#d32f2f"));
  }

  void severalSelectedRunsAreCompared() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    const auto a = session->store()->addRun({"spark", "train", "crosslab", "8B", 111, "", ""});
    const auto b = session->store()->addRun({"mi300x", "train", "crosslab", "8B", 111, "", ""});
    session->store()->appendMetrics(a, rows(1, 4));
    session->store()->appendMetrics(b, rows(1, 6));
    panel.poll();
    panel.table()->selectAll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->runs().size(), 2);
    QCOMPARE(panel.chart()->totalLossPoints(a), 4);
    QCOMPARE(panel.chart()->totalLossPoints(b), 6);
  }

  void filterNarrowsTheList() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    session->store()->addRun({"alpha", "train", "crosslab", "8B", 1, "", ""});
    session->store()->addRun({"beta", "train", "crosslab", "70B", 1, "", ""});
    panel.poll();
    auto* filter = panel.findChild<QLineEdit*>();
    QVERIFY(filter);
    filter->setText("70B");
    QCOMPARE(panel.table()->model()->rowCount(), 1);
    QCOMPARE(panel.table()->model()->index(0, 0).data().toString(), QString("beta"));
  }

  void chartCoalescesAppendsFromAnotherThread() {
    LossChart chart;
    chart.addRun(1, "r");
    std::thread producer([&chart] {
      for (int i = 1; i <= 500; ++i) chart.append(1, {{i, 0.0, 1.0 / i, 1e-4, std::nullopt}});
    });
    producer.join();
    QTRY_COMPARE(chart.totalLossPoints(1), 500);
    QVERIFY2(chart.repaintCount() < 500, "every append repainted");
  }

  void decimationKeepsEndsAndSpikes() {
    QVector<QPointF> pts;
    for (int i = 0; i < 10000; ++i) pts.append({double(i), 1.0});
    pts[5000].setY(9.0);  // a loss spike
    const auto d = LossChart::decimate(pts, LossChart::kMaxPlotted);
    QVERIFY(d.size() <= LossChart::kMaxPlotted);
    QCOMPARE(d.front(), pts.front());
    QCOMPARE(d.back(), pts.back());
    QVERIFY(std::any_of(d.begin(), d.end(), [](const QPointF& p) { return p.y() == 9.0; }));
    for (int i = 1; i < d.size(); ++i) QVERIFY(d[i].x() > d[i - 1].x());
    QCOMPARE(LossChart::decimate(pts.mid(0, 100), LossChart::kMaxPlotted).size(), 100);
  }

  void emaAndLogScale() {
    const auto e = LossChart::ema({{0, 1.0}, {1, 0.0}, {2, 0.0}}, 0.5);
    QCOMPARE(e[0].y(), 1.0);
    QCOMPARE(e[1].y(), 0.5);
    QCOMPARE(e[2].y(), 0.25);
    LossChart chart;
    chart.addRun(7, "r");
    chart.append(7, {{1, 0, 2.0, 1e-4, std::nullopt}, {2, 0, 0.5, 1e-4, 0.7}});
    chart.flush();
    chart.setSmoothing(0.0);
    QCOMPARE(chart.plottedEma(7).back().y(), 0.5);  // no smoothing: the raw value
    chart.setLogScale(true);
    const auto axes = chart.chart()->axes();
    QVERIFY(std::any_of(axes.begin(), axes.end(), [](QAbstractAxis* a) { return qobject_cast<QLogValueAxis*>(a) != nullptr; }));
    QCOMPARE(chart.plottedLossPoints(7), 2);
  }

  void newRunFormValidatesAndPreviews() {
    widgets::NewRunDialog dialog(tmp_.filePath("lab"));
    QVERIFY(dialog.problems().join(' ').contains("base model"));
    dialog.setModelPath("/models/llama");
    dialog.setDataPath("/data/train.jsonl");
    QVERIFY2(dialog.problems().isEmpty(), qPrintable(dialog.problems().join("; ")));
    const QString command = dialog.findChild<QPlainTextEdit*>("commandPreview")->toPlainText();
    QVERIFY(command.startsWith("crosslab-cli train --model /models/llama --data /data/train.jsonl"));
    QVERIFY(command.contains("--lora-rank 16 --lora-alpha 32 --lora-target all"));
    QVERIFY(command.contains("--lab " + tmp_.filePath("lab")));
    QVERIFY(dialog.findChild<QPlainTextEdit*>("yamlPreview")->toPlainText().contains("lora_rank: 16"));
    dialog.findChild<QCheckBox*>("down_proj")->setChecked(false);
    QVERIFY(dialog.cliArguments().join(' ').contains("--lora-target q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj"));
    for (auto* c : dialog.findChildren<QCheckBox*>()) c->setChecked(false);
    QVERIFY(dialog.problems().join(' ').contains("lora_target"));
  }

  // A real local trainer started from the panel and killed with SIGKILL: the run turns
  // failed, in red, with a reason naming the signal, and the panel shows it.
  void killedRealTrainerTurnsFailedRed() {
    auto session = openLab();
    const QString model = tmp_.filePath("model"), data = tmp_.filePath("data.json"), run = tmp_.filePath("run-killed");
    QVERIFY(QDir().mkpath(model));
    testing::writeTinyLlama(model.toStdString(), {});
    testing::writeTinyTokenizer(model.toStdString());
    QJsonArray records;
    for (int i = 0; i < 64; ++i)
      records.append(QJsonObject{{"instruction", QString("What is item %1?").arg(i)}, {"input", ""},
                                 {"output", QString("Item %1 is a box.").arg(i)}});
    QFile f(data);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(records).toJson());
    f.close();
    widgets::TrainingPanel panel(session.get());
    qputenv("CROSSLAB_CLI", CROSSLAB_CLI);
    QVERIFY(panel.startTraining({"train", "--model", model, "--data", data, "--out", run, "--lab", session->path(),
                                 "--dtype", "f32", "--lora-rank", "4", "--per-device-train-batch-size", "1",
                                 "--gradient-accumulation-steps", "1", "--num-train-epochs", "100", "--logging-steps",
                                 "1", "--threads", "1"}));
    qunsetenv("CROSSLAB_CLI");
    QVERIFY(rowOf(session.get(), run).id != 0);  // registered before the child runs
    // Training for real: metrics rows arrive and the record of its process is there.
    QTRY_VERIFY_WITH_TIMEOUT(rowOf(session.get(), run).lastStep.value_or(0) >= 2, 60000);
    QVERIFY(train::readProcessRecord(run.toStdString()).has_value());
    QCOMPARE(rowOf(session.get(), run).status, std::string("running"));
    const qint64 pid = panel.childPid();
    QVERIFY(pid > 0);
    QCOMPARE(::kill(pid_t(pid), SIGKILL), 0);
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), run).status, std::string("failed"), 10000);
    const auto row = rowOf(session.get(), run);
    QVERIFY2(QString::fromStdString(row.statusReason).contains("SIGKILL"), row.statusReason.c_str());
    panel.poll();
    const int r = panel.runsModel()->rowOfRun(row.id);
    QCOMPARE(panel.runsModel()->index(r, RunsModel::Status).data(Qt::ForegroundRole).value<QBrush>().color(), QColor("#d32f2f"));
    panel.selectRun(row.id);
    QVERIFY(panel.statusText().contains("SIGKILL"));
    QVERIFY(panel.findChild<QLabel*>("runStatus")->styleSheet().contains("#d32f2f"));
  }

  void errorFormTurnsFailed_data() {
    QTest::addColumn<QString>("script");
    QTest::addColumn<QString>("reason");
    QTest::newRow("traceback") << "echo 'Traceback (most recent call last):'; echo '  File \"train.py\", line 3'; "
                                  "echo 'ValueError: bad dataset'; exec sleep 30"
                               << "ValueError: bad dataset";
    QTest::newRow("cuda-oom") << "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'; exec sleep 30"
                              << "out of memory (CUDA)";
    QTest::newRow("hip-oom") << "echo 'HIP out of memory. Tried to allocate 1.00 GiB' >&2; exec sleep 30"
                             << "out of memory (ROCm)";
    QTest::newRow("killed") << "echo step 1; echo Killed; exec sleep 30" << "killed";
    QTest::newRow("cli-error") << "echo 'error: /models/fake: not a directory' >&2; exit 1"
                               << "exited with status 1: error: /models/fake: not a directory";
    // NaN loss in the run's events.jsonl, as the trainer would write it.
    QTest::newRow("nan-loss") << "sleep 0.3; printf '{\"current_steps\": 3, \"total_steps\": 9, \"loss\": NaN}\\n' "
                                 ">> \"$4\"/events.jsonl; exec sleep 30"
                              << "not finite";
  }

  // A child printing an error form (or logging a NaN loss) is failed while it still runs.
  void errorFormTurnsFailed() {
    QFETCH(QString, script);
    QFETCH(QString, reason);
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    panel.setWatchOptions(quickWatch(60));
    const QString run = tmp_.filePath(QString("run-%1").arg(QTest::currentDataTag()));
    QVERIFY(QDir().mkpath(run));
    qputenv("CROSSLAB_CLI", "/bin/sh");
    QVERIFY(panel.startTraining(fakeArgs(session.get(), run, script)));
    qunsetenv("CROSSLAB_CLI");
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), run).status, std::string("failed"), 10000);
    // The reason settles once the child's last lines are in (a traceback names its error last).
    QTRY_VERIFY2_WITH_TIMEOUT(QString::fromStdString(rowOf(session.get(), run).statusReason).contains(reason),
                              rowOf(session.get(), run).statusReason.c_str(), 10000);
    QCOMPARE(panel.watch()->state(), train::RunState::Failed);
    panel.poll();
    panel.selectRun(rowOf(session.get(), run).id);
    QVERIFY2(panel.statusText().contains(reason.toHtmlEscaped()), qPrintable(panel.statusText()));
    QVERIFY(panel.findChild<QLabel*>("runStatus")->styleSheet().contains("#d32f2f"));
  }

  // A child that goes silent is stalled; the thresholds come from the options.
  void silentChildTurnsStalled() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    panel.setWatchOptions(quickWatch(1));
    const QString run = tmp_.filePath("run-silent");
    QVERIFY(QDir().mkpath(run));
    qputenv("CROSSLAB_CLI", "/bin/sh");
    QVERIFY(panel.startTraining(fakeArgs(session.get(), run, "echo loading; exec sleep 30")));
    qunsetenv("CROSSLAB_CLI");
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), run).status, std::string("stalled"), 10000);
    QVERIFY(QString::fromStdString(rowOf(session.get(), run).statusReason).contains("no sign of life"));
    panel.poll();
    const auto id = rowOf(session.get(), run).id;
    QCOMPARE(panel.runsModel()->index(panel.runsModel()->rowOfRun(id), RunsModel::Status).data(Qt::ForegroundRole)
                 .value<QBrush>().color(), QColor("#e65100"));
  }

  // A store row still marked running whose trainer is gone (the GUI restarted, or a CLI run
  // was killed) does not look alive; one whose trainer lives stays running.
  void runWhoseProcessIsGoneTurnsFailed() {
    auto session = openLab();
    const QString alive = tmp_.filePath("run-alive"), gone = tmp_.filePath("run-gone"), bare = tmp_.filePath("run-bare");
    for (const auto& d : {alive, gone, bare}) QVERIFY(QDir().mkpath(d));
    train::writeProcessRecord(alive.toStdString());  // this test process: alive
    QProcess dead;
    dead.start("/bin/sleep", {"0.2"});
    QVERIFY(dead.waitForStarted());
    auto record = train::currentProcessRecord();
    record.pid = dead.processId();
    QVERIFY(dead.waitForFinished());
    QVERIFY(record.pid > 0);
    train::writeProcessRecord(gone.toStdString(), record);
    auto* lab = session->store();
    auto abs = [](const QString& d) { return std::filesystem::absolute(d.toStdString()).lexically_normal().string(); };
    lab->addRun({"alive", "train", "crosslab", "m", 10, abs(alive), ""});
    lab->addRun({"gone", "train", "crosslab", "m", 10, abs(gone), ""});
    lab->addRun({"bare", "train", "crosslab", "m", 10, abs(bare), ""});  // no record, fresh
    widgets::TrainingPanel panel(session.get());
    panel.poll();
    auto status = [&](const QString& dir) { return rowOf(session.get(), dir).status; };
    QCOMPARE(status(gone), std::string("failed"));
    QVERIFY(QString::fromStdString(rowOf(session.get(), gone).statusReason).contains("is gone"));
    QCOMPARE(status(alive), std::string("running"));
    QCOMPARE(status(bare), std::string("running"));  // younger than the stale limit
    panel.setOrphanStaleSeconds(0);  // … and once the limit is passed, a run without a record is dead
    QTRY_COMPARE_WITH_TIMEOUT(status(bare), std::string("failed"), 5000);
    QCOMPARE(status(alive), std::string("running"));
  }

  void startAndStopDriveARealChild() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    qputenv("CROSSLAB_CLI", "/bin/sh");
    QVERIFY(panel.startTraining({"-c", "echo step 1 of 111; exec sleep 30"}));
    auto* out = panel.findChild<QPlainTextEdit*>("runOutput");
    QTRY_VERIFY(out->toPlainText().contains("step 1 of 111"));
    QVERIFY(!panel.startTraining({"-c", "true"}));  // one child at a time
    panel.findChild<QPushButton*>("stopButton")->click();
    QTRY_VERIFY_WITH_TIMEOUT(out->toPlainText().contains("training process"), 15000);
    qunsetenv("CROSSLAB_CLI");
  }
};

QTEST_MAIN(TestTrainingPanel)
#include "test_training_panel.moc"
