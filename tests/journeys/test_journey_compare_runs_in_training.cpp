// Journey: a user trains two more LoRA runs on the demo lab from a shell (real
// `crosslab-cli train` children beside the open window; one with eval loss, one stopped
// after a single step), then in Training at 1024×700 selects runs with the mouse to compare
// them, turns on the log scale and drags the smoothing to its maximum. Checks what the
// chart shows: distinct legend names that fit (no "lora-20…" twice), an eval entry only for
// the run with eval loss, several labels on a log axis, whole-step ticks and a sane range
// for a single point, and a smoothed curve that stays among the data; and the lab
// afterwards (integrity_check, the runs rows). Issue 11 items 6 (Training legend at
// 1024×700) and 7.
#include <QCheckBox>
#include <QGraphicsTextItem>
#include <QHeaderView>
#include <QLegend>
#include <QLegendMarker>
#include <QXYSeries>
#include <QSlider>
#include <QTableView>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <memory>

#include "tests/journeys/journey_support.h"
#include "widgets/loss_chart.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

const QString kRunA = "lora-20261130-223344";  // names as the New Run dialog makes them:
const QString kRunB = "lora-20261130-223512";  // a long shared prefix

// Clicks the runs table's row of run `name`, with `modifiers` (Ctrl adds it to the selection).
bool clickRun(QTableView* table, const QString& name, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  int row = -1;
  if (!waitUntil([&] { return (row = rowWith(table->model(), {name})) >= 0; }, "run " + name + " in the list")) return false;
  const QModelIndex index = table->model()->index(row, 0);
  table->scrollTo(index);
  QTest::mouseClick(table->viewport(), Qt::LeftButton, modifiers, table->visualRect(index).center());
  return true;
}

// The loss points of the raw series of the run labelled `legend` (visible or not).
QVector<QPointF> rawLoss(widgets::LossChart* chart, const QString& runLabel) {
  for (QAbstractSeries* s : chart->chart()->series())
    if (s->name() == runLabel + " loss (raw)") return static_cast<QXYSeries*>(s)->points();
  return {};
}

// The legend's labels as drawn (the text items inside the legend, elided or not).
QStringList drawnLegend(widgets::LossChart* chart) {
  QStringList out;
  std::function<void(QGraphicsItem*)> walk = [&](QGraphicsItem* item) {
    if (!item->isVisible()) return;
    if (auto* text = dynamic_cast<QGraphicsTextItem*>(item)) out << text->toPlainText();
    for (QGraphicsItem* child : item->childItems()) walk(child);
  };
  walk(chart->chart()->legend());
  return out;
}

}  // namespace

class TestJourneyCompareRunsInTraining : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void compareRunsLogScaleAndSmoothing() {
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = std::make_unique<widgets::MainWindow>();
    QVERIFY(showAt(window.get(), 1024, 700));
    QVERIFY(openLabFromMenu(window.get(), lab.path()));
    QVERIFY(showPanel(window.get(), "Training"));

    // Two runs from a shell while the window is open: A with eval loss, and a learning rate
    // and batch that make its (seeded) loss fall clear of the noise; B stopped after its
    // first step.
    const QStringList common{"train", "--model", lab.file("models/demo-base"), "--data", lab.file("data/demo_train.json"),
                             "--lab", lab.path(), "--logging-steps", "1", "--threads", "1"};
    auto a = runCliBesideWindow(common + QStringList{"--out", lab.file("runs/" + kRunA), "--max-steps", "24",
                                                     "--learning-rate", "5e-3", "--lr-scheduler-type", "constant", "--warmup-ratio", "0",
                                                     "--per-device-train-batch-size", "4", "--num-train-epochs", "100",
                                                     "--val-size", "0.1", "--eval-steps", "8"});
    QVERIFY2(a.code == 0, a.err.constData());
    auto b = runCliBesideWindow(common + QStringList{"--out", lab.file("runs/" + kRunB), "--max-steps", "1"});
    QVERIFY2(b.code == 0, b.err.constData());

    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    auto* chart = waitFor<widgets::LossChart>(window.get(), "lossChart");
    QVERIFY(runs && chart);

    // Compare A and B: two distinct, uncut legend names; "eval" only for A.
    QVERIFY(clickRun(runs, kRunA));
    QVERIFY(clickRun(runs, kRunB, Qt::ControlModifier));
    QVERIFY(waitUntil([&] { return chart->runs().size() == 2 && chart->totalLossPoints(chart->runs()[0]) > 0 &&
                                   chart->totalLossPoints(chart->runs()[1]) > 0; },
                      "both runs' curves"));
    QStringList legend;
    QVERIFY(waitUntil([&] { return (legend = chart->legendLabels()).size() == 3; }, "three legend entries"));
    const QStringList evals = legend.filter(" eval");
    QCOMPARE(evals.size(), 1);  // B has no eval loss: no "eval" entry for it
    QStringList names = legend;
    for (const QString& e : evals) names.removeAll(e);
    QCOMPARE(names.size(), 2);
    QVERIFY2(names[0] != names[1], qPrintable(names.join(" | ")));
    QVERIFY2(names.filter("223344").size() == 1 && names.filter("223512").size() == 1, qPrintable(names.join(" | ")));
    QVERIFY2(evals[0].startsWith(names.filter("223344").value(0)), qPrintable(evals[0]));
    // As drawn: every label whole (Qt cuts a label that has no room to "...").
    QVERIFY(waitUntil([&] { return drawnLegend(chart) == legend; },
                      "the legend to draw " + legend.join(" | ") + " (draws " + drawnLegend(chart).join(" | ") + ")"));

    // B alone: one point. Whole-step ticks, each once; a y range around the point.
    QVERIFY(clickRun(runs, kRunB));
    QVERIFY(waitUntil([&] { return chart->runs().size() == 1 && chart->totalLossPoints(chart->runs()[0]) == 1; },
                      "run B's single point"));
    QStringList xTicks = chart->xTickLabels();
    QVERIFY2(xTicks.size() >= 2 && xTicks.removeDuplicates() == 0, qPrintable(chart->xTickLabels().join(" ")));
    for (const QString& t : xTicks) {
      bool whole = false;
      t.toInt(&whole);
      QVERIFY2(whole, qPrintable(t));
    }
    const QVector<QPointF> one = rawLoss(chart, kRunB);
    QCOMPARE(one.size(), 1);
    const QPointF yr = chart->yRange();
    QVERIFY2(yr.x() < one[0].y() && one[0].y() < yr.y() && yr.y() - yr.x() >= 0.05 * one[0].y(),
             qPrintable(QString("y %1..%2 for a point at %3").arg(yr.x()).arg(yr.y()).arg(one[0].y())));
    QVERIFY(chart->legendLabels().filter(" eval").isEmpty());
    QStringList yTicks = chart->yTickLabels();
    QVERIFY2(yTicks.removeDuplicates() == 0, qPrintable(chart->yTickLabels().join(" ")));

    // A alone, log scale: several labels on the loss axis.
    QVERIFY(clickRun(runs, kRunA));
    QVERIFY(waitUntil([&] { return chart->runs().size() == 1 && chart->totalLossPoints(chart->runs()[0]) >= 20; },
                      "run A's curve"));
    QVERIFY(click(waitFor<QCheckBox>(window.get(), "logScale")));
    QVERIFY(waitUntil([&] { return chart->logScale(); }, "the log scale"));
    const QStringList logTicks = chart->yTickLabels();
    QVERIFY2(logTicks.size() >= 3, qPrintable(logTicks.join(" ")));
    QVERIFY(click(waitFor<QCheckBox>(window.get(), "logScale")));

    // Smoothing at its maximum (End on the slider): the curve stays among the data: each
    // smoothed point within the range of the data up to it, and the last one within the
    // range of the last third of the data (not held up by the first loss).
    auto* smoothing = waitFor<QSlider>(window.get(), "smoothing");
    smoothing->setFocus();
    QTest::keyClick(smoothing, Qt::Key_End);
    QCOMPARE(smoothing->value(), smoothing->maximum());
    QVERIFY(waitUntil([&] { return chart->smoothing() >= 0.99; }, "maximum smoothing"));
    const QVector<QPointF> raw = rawLoss(chart, kRunA), smooth = chart->plottedEma(chart->runs()[0]);
    QCOMPARE(smooth.size(), raw.size());
    double lo = raw[0].y(), hi = raw[0].y();
    for (int i = 0; i < raw.size(); ++i) {
      lo = std::min(lo, raw[i].y());
      hi = std::max(hi, raw[i].y());
      QVERIFY2(smooth[i].y() >= lo - 1e-9 && smooth[i].y() <= hi + 1e-9,
               qPrintable(QString("smoothed %1 outside the data %2..%3 at step %4").arg(smooth[i].y()).arg(lo).arg(hi).arg(raw[i].x())));
    }
    const int third = raw.size() / 3;
    double tailLo = raw.back().y(), tailHi = raw.back().y();
    for (int i = raw.size() - third; i < raw.size(); ++i) tailLo = std::min(tailLo, raw[i].y()), tailHi = std::max(tailHi, raw[i].y());
    QVERIFY2(raw.front().y() > tailHi, "the loss did not fall: the smoothing check needs a falling curve");
    QVERIFY2(smooth.back().y() >= tailLo && smooth.back().y() <= tailHi,
             qPrintable(QString("last smoothed %1 outside the last third's %2..%3 (first loss %4)")
                            .arg(smooth.back().y()).arg(tailLo).arg(tailHi).arg(raw.front().y())));

    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(labQuery(lab.path(), "SELECT name || ' ' || status FROM runs WHERE name LIKE 'lora-%' ORDER BY name"),
             (QStringList{kRunA + " finished", kRunB + " finished"}));
  }
};

QTEST_MAIN(TestJourneyCompareRunsInTraining)
#include "test_journey_compare_runs_in_training.moc"
