// The Training panel offscreen: a run appears, its curve grows while metrics arrive (an
// eval loss landing in an old step too), a failed run turns red with its reason, runs
// compare, the chart coalesces and decimates; runs started through the panel as detached
// processes (a real `crosslab-cli train`, or stand-in trainers named by $CROSSLAB_CLI):
// killed with SIGKILL, printing each error form, chatty without steps (stalled), stopped
// cleanly with a checkpoint, and left running when the panel goes — a new panel follows
// it again; a store row whose trainer process is gone.
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
#include <map>
#include <thread>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/train/run_process.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "backends/runs/run_controller.h"
#include "widgets/runs_model.h"
#include "widgets/training_panel.h"
#include "tests/model/tiny_llama.h"
#include "tests/train/tiny_tokenizer.h"

using namespace crosslab;
using widgets::LossChart;
using widgets::RunsModel;

namespace {
store::NewRun newRun(const std::string& name, std::optional<std::int64_t> total, const std::string& engine = "crosslab",
                     const std::string& dir = {}) {
  store::NewRun r;
  r.name = name;
  r.engine = engine;
  r.model = "m";
  r.totalSteps = total;
  r.runDir = dir;
  return r;
}

// Sets an environment variable for its scope. Declare it before the panel: the panel's run
// worker starts processes (QProcess: vfork semantics, the child's execve reads environ as
// the parent's other threads change it), and a setenv/unsetenv beside such a start hands
// execve a torn environ ("cannot run /bin/sh: execvp: Bad address"). Set before the panel's
// thread exists, unset after it is joined.
struct ScopedEnv {
  QByteArray name;
  ScopedEnv(const char* n, const QByteArray& value) : name(n) { qputenv(n, value); }
  ~ScopedEnv() { qunsetenv(name.constData()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

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

  static store::RunSummary rowOf(backends::LabSession* session, qint64 id) {
    return session->store()->runs().byId(id).value_or(store::RunSummary{});
  }

  // Watchdog thresholds for stand-in trainers, and a fast poll.
  static backends::RunController::Options quick(double stallSeconds) {
    backends::RunController::Options o;
    o.monitor.stallFloorSeconds = stallSeconds;
    o.monitor.startupGraceSeconds = stallSeconds;
    o.tickMs = 100;
    o.stopGraceSeconds = 60;
    return o;
  }

  // A stand-in `crosslab-cli`: a shell script the panel runs as `SCRIPT train --recipe R
  // --out RUN_DIR --lab LAB --run-id N` (RUN_DIR is "$5").
  QString standIn(const QString& name, const QString& body) {
    const QString path = tmp_.filePath(name + ".sh");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
    f.write(("#!/bin/sh\n" + body + "\n").toUtf8());
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    return path;
  }

  // A tiny real model and data set, for the real trainer.
  void writeModelAndData(const QString& model, const QString& data, int records = 64) {
    QVERIFY(QDir().mkpath(model));
    testing::writeTinyLlama(model.toStdString(), {});
    testing::writeTinyTokenizer(model.toStdString());
    QJsonArray all;
    for (int i = 0; i < records; ++i)
      all.append(QJsonObject{{"instruction", QString("What is item %1?").arg(i)}, {"input", ""},
                             {"output", QString("Item %1 is a box.").arg(i)}});
    QFile f(data);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(all).toJson());
  }

  widgets::NewRunChoice localChoice(backends::LabSession* session, const QString& name, const QString& model,
                                    const QString& data) {
    widgets::NewRunChoice c;
    c.name = name;
    c.recipe = train::Recipe::labDefaults();
    c.recipe.modelPath = model.toStdString();
    c.recipe.datasetFile = data.toStdString();
    c.recipe.dtype = "f32";
    c.recipe.loraRank = 4;
    c.recipe.gradientAccumulationSteps = 1;
    c.recipe.numTrainEpochs = 100;
    c.recipe.outputDir = QDir(session->path()).filePath("runs/" + name).toStdString();
    c.dataPath = data;
    return c;
  }

 private slots:
  void runAppearsAndCurveGrows() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    QCOMPARE(panel.runsModel()->rowCount(), 0);
    QVERIFY(panel.statusText().contains("No training runs"));
    auto runs = session->store()->runs();
    const auto run = runs.requestCreate(newRun("8b-lora", 111, "crosslab", "/labs/x/runs/8b-lora"));
    panel.poll();
    QCOMPARE(panel.runsModel()->rowCount(), 1);
    QCOMPARE(panel.runsModel()->index(0, RunsModel::Name).data().toString(), QString("8b-lora"));
    panel.selectRun(run);
    QCOMPARE(panel.chart()->runs(), QList<qint64>{run});

    runs.appendMetrics(run, rows(1, 5));
    panel.poll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 5);
    runs.appendMetrics(run, rows(6, 9));  // more events arrive: the curve grows, nothing doubles
    panel.poll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 9);
    QCOMPARE(panel.chart()->plottedLossPoints(run), 9);
    QCOMPARE(panel.runsModel()->index(0, RunsModel::Steps).data().toString(), QString("9 / 111"));
    QVERIFY(panel.statusText().contains("step 9 of 111"));
  }

  // The trainer folds an eval loss into its step's row after the chart read that step:
  // the row's seq moves on, the chart reads it again and draws the eval point.
  void evalLossLandingLaterIsDrawn() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    auto runs = session->store()->runs();
    const auto run = runs.requestCreate(newRun("eval", 10));
    runs.appendMetrics(run, rows(1, 3));
    panel.poll();
    panel.selectRun(run);
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 3);
    store::MetricRow eval;
    eval.step = 2;
    eval.evalLoss = 0.61;
    runs.appendMetrics(run, {eval});  // between two polls, for a step already drawn
    runs.appendMetrics(run, rows(4, 4));
    panel.poll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->totalLossPoints(run), 4);  // step 2 replaced, not doubled
    QCOMPARE(panel.chart()->plottedEvalPoints(run), 1);
  }

  void failedRunTurnsRedWithReason() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    auto runs = session->store()->runs();
    const auto run = runs.requestCreate(newRun("70b", 111, "llamafactory"));
    runs.appendMetrics(run, rows(1, 3));
    QVERIFY(runs.requestStatus(run, train::RunStatus::Running));
    QVERIFY(runs.requestStatus(run, train::RunStatus::Failed, "HIP out of memory. Tried to allocate 2.00 GiB"));
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
    auto runs = session->store()->runs();
    const auto a = runs.requestCreate(newRun("spark", 111));
    const auto b = runs.requestCreate(newRun("mi300x", 111));
    runs.appendMetrics(a, rows(1, 4));
    runs.appendMetrics(b, rows(1, 6));
    panel.poll();
    panel.table()->selectAll();
    panel.chart()->flush();
    QCOMPARE(panel.chart()->runs().size(), 2);
    QCOMPARE(panel.chart()->totalLossPoints(a), 4);
    QCOMPARE(panel.chart()->totalLossPoints(b), 6);
  }

  // A run that another process adds (a shell's train) resets the list; the two runs the user
  // had picked with the mouse stay picked, and both curves stay on the chart.
  void aNewRunFromElsewhereKeepsTheSelection() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    panel.resize(1024, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto runs = session->store()->runs();
    const auto a = runs.requestCreate(newRun("spark", 111));
    const auto b = runs.requestCreate(newRun("mi300x", 111));
    runs.requestCreate(newRun("third", 111));
    runs.appendMetrics(a, rows(1, 4));
    runs.appendMetrics(b, rows(1, 6));
    panel.poll();
    auto* table = panel.table();
    auto click = [&](qint64 id, Qt::KeyboardModifiers mods) {
      for (int r = 0; r < table->model()->rowCount(); ++r)
        if (table->model()->index(r, 0).data(widgets::RunsModel::RunIdRole).toLongLong() == id) {
          QTest::mouseClick(table->viewport(), Qt::LeftButton, mods, table->visualRect(table->model()->index(r, 0)).center());
          return true;
        }
      return false;
    };
    QVERIFY(click(a, Qt::NoModifier));
    QVERIFY(click(b, Qt::ControlModifier));
    auto sorted = [](QList<qint64> v) { std::sort(v.begin(), v.end()); return v; };
    QCOMPARE(sorted(panel.selectedRuns()), (QList<qint64>{a, b}));
    runs.requestCreate(newRun("from-a-shell", 111));  // the row set changes: the model resets
    panel.poll();
    QCOMPARE(table->model()->rowCount(), 4);
    QCOMPARE(sorted(panel.selectedRuns()), (QList<qint64>{a, b}));
    panel.chart()->flush();
    QCOMPARE(panel.chart()->runs().size(), 2);
    QCOMPARE(panel.chart()->totalLossPoints(a), 4);
    QCOMPARE(panel.chart()->totalLossPoints(b), 6);
  }

  void filterNarrowsTheList() {
    auto session = openLab();
    widgets::TrainingPanel panel(session.get());
    auto runs = session->store()->runs();
    runs.requestCreate(newRun("alpha", 1));
    auto beta = newRun("beta", 1);
    beta.model = "70B";
    runs.requestCreate(beta);
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
    // Debiased: weighted means of the points so far (weights 1; 1/3, 2/3; 1/7, 2/7, 4/7).
    const auto e = LossChart::ema({{0, 1.0}, {1, 0.0}, {2, 0.0}}, 0.5);
    QCOMPARE(e[0].y(), 1.0);
    QVERIFY(std::abs(e[1].y() - 1.0 / 3) < 1e-12);
    QVERIFY(std::abs(e[2].y() - 1.0 / 7) < 1e-12);
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

  // A real local trainer started from the panel (detached) and killed with SIGKILL: the
  // run turns failed, in red, with a reason naming the signal.
  void killedRealTrainerTurnsFailedRed() {
    auto session = openLab();
    const QString model = tmp_.filePath("model-k"), data = tmp_.filePath("data-k.json");
    writeModelAndData(model, data);
    const ScopedEnv cli("CROSSLAB_CLI", CROSSLAB_CLI);
    widgets::TrainingPanel panel(session.get());
    panel.controller()->setOptions(quick(60));
    QString error;
    const qint64 id = panel.startRun(localChoice(session.get(), "killed", model, data), &error);
    QVERIFY2(id, qPrintable(error));
    QCOMPARE(rowOf(session.get(), id).status, std::string("pending"));  // registered before the trainer runs
    const QString run = QDir(session->path()).filePath("runs/killed");
    QVERIFY(QFile::exists(run + "/recipe.json"));  // started with --recipe FILE in its folder
    QTRY_VERIFY_WITH_TIMEOUT(rowOf(session.get(), id).lastStep.value_or(0) >= 2, 120000);
    QCOMPARE(rowOf(session.get(), id).status, std::string("running"));
    const auto record = train::readProcessRecord(run.toStdString());
    QVERIFY(record.has_value());
    QCOMPARE(::kill(pid_t(record->pid), SIGKILL), 0);
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), id).status, std::string("failed"), 20000);
    const auto row = rowOf(session.get(), id);
    QVERIFY2(QString::fromStdString(row.statusReason).contains("SIGKILL"), row.statusReason.c_str());
    panel.poll();
    const int r = panel.runsModel()->rowOfRun(id);
    QCOMPARE(panel.runsModel()->index(r, RunsModel::Status).data(Qt::ForegroundRole).value<QBrush>().color(), QColor("#d32f2f"));
    panel.selectRun(id);
    QVERIFY(panel.statusText().contains("SIGKILL"));
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
                                 ">> \"$5\"/events.jsonl; exec sleep 30"
                              << "not finite";
  }

  // A run printing an error form (or logging a NaN loss) is failed while it still runs,
  // and the leftover process is gone after Stop.
  void errorFormTurnsFailed() {
    QFETCH(QString, script);
    QFETCH(QString, reason);
    auto session = openLab();
    const ScopedEnv cli("CROSSLAB_CLI", standIn(QString("err-%1").arg(QTest::currentDataTag()), script).toUtf8());
    widgets::TrainingPanel panel(session.get());
    panel.controller()->setOptions(quick(60));
    QString error;
    const qint64 id = panel.startRun(localChoice(session.get(), QString("err-%1").arg(QTest::currentDataTag()), "/m", "/d"), &error);
    QVERIFY2(id, qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), id).status, std::string("failed"), 20000);
    // The reason settles once the last lines are in (a traceback names its error last).
    QTRY_VERIFY2_WITH_TIMEOUT(QString::fromStdString(rowOf(session.get(), id).statusReason).contains(reason),
                              rowOf(session.get(), id).statusReason.c_str(), 20000);
    panel.poll();
    panel.selectRun(id);
    QVERIFY2(panel.statusText().contains(reason.toHtmlEscaped()), qPrintable(panel.statusText()));
    QVERIFY(panel.findChild<QLabel*>("runStatus")->styleSheet().contains("#d32f2f"));
  }

  // The lab's friction item 5: a run that logged steps and then talks forever without a new
  // step (a hung collective, a stuck loader) is stalled, however much it prints; the
  // reason names the last step and the last lines.
  void chattyRunWithoutStepsIsStalled() {
    auto session = openLab();
    const QString script =
        "for s in 1 2 3; do printf '{\"current_steps\": %s, \"total_steps\": 9, \"loss\": 0.5, \"event\": \"step\"}\\n' $s "
        ">> \"$5\"/events.jsonl; sleep 0.2; done; "
        "while true; do echo 'NCCL WARN waiting for the collective'; sleep 0.2; done";
    const ScopedEnv cli("CROSSLAB_CLI", standIn("chatty", script).toUtf8());
    widgets::TrainingPanel panel(session.get());
    panel.controller()->setOptions(quick(2));
    QString error;
    const qint64 id = panel.startRun(localChoice(session.get(), "chatty", "/m", "/d"), &error);
    QVERIFY2(id, qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), id).status, std::string("stalled"), 30000);
    const QString why = QString::fromStdString(rowOf(session.get(), id).statusReason);
    QVERIFY2(why.contains("last step 3 of 9"), qPrintable(why));
    QVERIFY2(why.contains("NCCL WARN"), qPrintable(why));
    panel.poll();
    QCOMPARE(panel.runsModel()->index(panel.runsModel()->rowOfRun(id), RunsModel::Status).data(Qt::ForegroundRole)
                 .value<QBrush>().color(), QColor("#e65100"));
    // Stop ends it: nothing of it is left running.
    panel.selectRun(id);
    auto* stop = panel.findChild<QPushButton*>("stopButton");
    QTRY_VERIFY(stop->isEnabled());
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), id).status, std::string("stopped"), 30000);
    const QString pid = QString::fromUtf8([&] {
      QFile f(QDir(session->path()).filePath("runs/chatty/child_pid"));
      return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray();
    }());
    QVERIFY(!pid.isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(pid.toLongLong()), 0) != 0, 20000);
  }

  // Stop on a real trainer: SIGTERM, a checkpoint, status stopped with the step, and the
  // run continues with --resume later. Closing the panel before did not stop it: a new
  // panel on the lab follows it again.
  void runOutlivesThePanelAndStopsCleanly() {
    auto session = openLab();
    const QString model = tmp_.filePath("model-s"), data = tmp_.filePath("data-s.json");
    writeModelAndData(model, data);
    qint64 id = 0;
    {
      const ScopedEnv cli("CROSSLAB_CLI", CROSSLAB_CLI);  // unset once the panel (and its worker) is gone
      widgets::TrainingPanel panel(session.get());
      panel.controller()->setOptions(quick(60));
      QString error;
      id = panel.startRun(localChoice(session.get(), "outlives", model, data), &error);
      QVERIFY2(id, qPrintable(error));
      QTRY_VERIFY_WITH_TIMEOUT(rowOf(session.get(), id).lastStep.value_or(0) >= 1, 120000);
    }  // the window goes: the trainer does not
    const QString run = QDir(session->path()).filePath("runs/outlives");
    const auto record = train::readProcessRecord(run.toStdString());
    QVERIFY(record && train::processAlive(*record).value_or(false));
    const auto before = rowOf(session.get(), id).lastStep.value_or(0);
    QTRY_VERIFY_WITH_TIMEOUT(rowOf(session.get(), id).lastStep.value_or(0) > before, 60000);  // still training
    widgets::TrainingPanel again(session.get());
    again.controller()->setOptions(quick(60));
    again.poll();
    again.selectRun(id);
    QTRY_VERIFY_WITH_TIMEOUT(again.controller()->following(id), 20000);  // picked up from its launch record
    auto* stop = again.findChild<QPushButton*>("stopButton");
    QTRY_VERIFY(stop->isEnabled());
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(rowOf(session.get(), id).status, std::string("stopped"), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!train::processAlive(*record).value_or(false), 20000);
    QTRY_VERIFY2_WITH_TIMEOUT(QString::fromStdString(rowOf(session.get(), id).statusReason).contains("checkpoint"),
                              rowOf(session.get(), id).statusReason.c_str(), 20000);
    const auto checkpoints = QDir(run).entryList({"checkpoint-*"}, QDir::Dirs);
    QVERIFY2(!checkpoints.isEmpty(), qPrintable(QDir(run).entryList().join(' ')));
  }

  // A store row still marked running whose trainer is gone (a shell's CLI run killed) does
  // not look alive; one whose trainer lives stays running.
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
    auto runs = session->store()->runs();
    std::map<QString, qint64> ids;
    for (const auto& d : {alive, gone, bare}) {
      ids[d] = runs.requestCreate(newRun(QFileInfo(d).fileName().toStdString(), 10, "crosslab", store::normalRunDir(d.toStdString())));
      QVERIFY(runs.requestStatus(ids[d], train::RunStatus::Running));
    }
    widgets::TrainingPanel panel(session.get());
    panel.poll();
    auto status = [&](const QString& dir) { return rowOf(session.get(), ids[dir]).status; };
    QCOMPARE(status(gone), std::string("failed"));
    QVERIFY(QString::fromStdString(rowOf(session.get(), ids[gone]).statusReason).contains("is gone"));
    QCOMPARE(status(alive), std::string("running"));
    QCOMPARE(status(bare), std::string("running"));  // younger than the stale limit
    panel.setOrphanStaleSeconds(0);  // … and once the limit is passed, a run without a record is dead
    QTRY_COMPARE_WITH_TIMEOUT(status(bare), std::string("failed"), 5000);
    QCOMPARE(status(alive), std::string("running"));
  }
};

QTEST_MAIN(TestTrainingPanel)
#include "test_training_panel.moc"
