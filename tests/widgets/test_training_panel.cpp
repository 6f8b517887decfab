// The Training panel offscreen: a run appears, its curve grows while metrics arrive, a
// failed run turns red with its reason, runs compare, the chart coalesces and decimates,
// the New Run form validates and previews, Start/Stop drive a real child process.
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTemporaryDir>
#include <QtCharts/QLogValueAxis>
#include <QtTest>
#include <thread>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "widgets/runs_model.h"
#include "widgets/training_panel.h"

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
