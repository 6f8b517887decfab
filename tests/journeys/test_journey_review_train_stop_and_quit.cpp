// Journey (issue #11, item 1, the sequence that corrupted labs): Review → Import Outputs…
// (the file dialog opens on the lab folder), Training → New Run… with a real
// `crosslab-cli train` child, Stop it after a few steps, give verdicts in Review, start and
// stop a second run, Lab → Quit. All along the window keeps its locks and live lab files;
// at the end the lab passes integrity_check and holds every row the window wrote.
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QTreeView>
#include <QtTest>

#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"
#include "widgets/runs_model.h"

using namespace crosslab;
using namespace crosslab::journey;
using widgets::RunsModel;

namespace {

// Steps done of `run` as the Training table shows it ("12 / 111" -> 12), or -1.
int stepsShown(QTableView* runs, const QString& run) {
  const auto* m = runs->model();
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, RunsModel::Name).data().toString() == run)
      return m->index(r, RunsModel::Steps).data().toString().section('/', 0, 0).trimmed().toInt();
  return -1;
}

QString statusShown(QTableView* runs, const QString& run) {
  const auto* m = runs->model();
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, RunsModel::Name).data().toString() == run) return m->index(r, RunsModel::Status).data().toString();
  return {};
}

}  // namespace

class TestJourneyReviewTrainStopAndQuit : public QObject {
  Q_OBJECT
  std::unique_ptr<DemoLab> lab_;
  std::unique_ptr<widgets::MainWindow> window_;

  QString soundness() {
    QStringList problems = staleLabDescriptors(lab_->path());
    if (const QString locks = labLocksLost(lab_->path()); !locks.isEmpty()) problems << locks;
    return problems.join("; ");
  }

  // Training → New Run… → fill the form → Start; then wait for `steps` steps and Stop.
  bool trainAndStop(const QString& name, int steps) {
    if (!showPanel(window_.get(), "Training")) return false;
    DialogDriver form("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      return typeInto(waitFor<QLineEdit>(d, "runName"), name) &&
             typeInto(waitFor<QLineEdit>(d, "baseModel"), lab_->file("models/demo-base")) &&
             typeInto(waitFor<QLineEdit>(d, "trainingData"), lab_->file("data/demo_train.json")) &&
             clickButton(d, "startButton");
    });
    if (!clickButton(window_.get(), "newRunButton") || !form.wait()) return false;
    auto* runs = waitFor<QTableView>(window_.get(), "runsTable");
    if (!runs || !waitUntil([&] { return stepsShown(runs, name) >= steps; }, name + " to reach step " + QString::number(steps),
                            kTrainWaitMs))
      return false;
    if (!clickButton(window_.get(), "stopButton")) return false;
    return waitUntil([&] { return statusShown(runs, name) == "stopped"; }, name + " to show as stopped", kTrainWaitMs);
  }

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void theCorruptingSequenceLeavesTheLabSound() {
    lab_ = std::make_unique<DemoLab>();
    QVERIFY(lab_->ok());
    QVERIFY(!lab_->writeOutputs("outputs-third.jsonl", "demo-third").isEmpty());
    window_ = std::make_unique<widgets::MainWindow>();
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(window_->openLab(lab_->path()));

    // Review → Import Outputs… from the lab folder.
    QVERIFY(showPanel(window_.get(), "Review"));
    auto* status = waitFor<QLabel>(window_.get(), "reviewStatus");
    QVERIFY(status);
    QVERIFY(waitUntil([&] { return status->text().contains("of 2 models"); }, "the demo's outputs in Review"));
    DialogDriver fileDialog("QFileDialog", [](QWidget* d) { return chooseInFileDialog(d, "outputs-third.jsonl"); });
    QVERIFY(clickButton(window_.get(), "importOutputsButton"));
    QVERIFY2(fileDialog.wait(), qPrintable(fileDialog.error()));
    QVERIFY(waitUntil([&] { return status->text().contains("of 3 models"); }, "the imported outputs in Review"));
    QVERIFY2(soundness().isEmpty(), qPrintable("after Import Outputs: " + soundness()));

    // A first run, started and stopped from the Training panel.
    QVERIFY(trainAndStop("run-one", 2));
    QVERIFY2(soundness().isEmpty(), qPrintable("after the first run: " + soundness()));

    // Verdicts by key: A better, next, B better, next, parity.
    QVERIFY(showPanel(window_.get(), "Review"));
    auto* questions = waitFor<QTreeView>(window_.get(), "reviewQuestions");
    QVERIFY(questions);
    const qint64 pairsBefore = rowCount(lab_->path(), "verdicts", "instrument = 'human:pair'");
    for (auto key : {Qt::Key_1, Qt::Key_J, Qt::Key_2, Qt::Key_J, Qt::Key_Equal}) QTest::keyClick(questions, key);
    QCOMPARE(rowCount(lab_->path(), "verdicts", "instrument = 'human:pair'"), pairsBefore + 3);

    // A second run, started and stopped.
    QVERIFY(trainAndStop("run-two", 2));
    QVERIFY2(soundness().isEmpty(), qPrintable("after the second run: " + soundness()));
    QCOMPARE(rowCount(lab_->path(), "verdicts", "instrument = 'human:pair'"), pairsBefore + 3);

    // Lab → Quit, then the lab as another process reads it.
    QVERIFY(chooseMenu(window_.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window_->isVisible(); }, "the window to close"));
    window_.reset();
    QCOMPARE(integrityCheck(lab_->path()), QString("ok"));
    QCOMPARE(rowCount(lab_->path(), "verdicts", "instrument = 'human:pair'"), pairsBefore + 3);
    QCOMPARE(rowCount(lab_->path(), "samples", "model = 'demo-third'"), qint64(30));
    QCOMPARE(rowCount(lab_->path(), "runs", "name IN ('run-one', 'run-two') AND status = 'stopped'"), qint64(2));
    QVERIFY(rowCount(lab_->path(), "metrics", "run_id IN (SELECT id FROM runs WHERE name = 'run-two')") >= 2);
    // The lab opens again.
    QVERIFY(runCliBesideWindow({"lab", "info", lab_->path()}).code == 0);
  }

  void cleanup() {
    window_.reset();
    lab_.reset();
  }
};

QTEST_MAIN(TestJourneyReviewTrainStopAndQuit)
#include "test_journey_review_train_stop_and_quit.moc"
