// Journey (#13 item 5): a run trains on this machine and the user quits the window. The
// close question says the run keeps training (Cancel keeps the window as it was); Quit
// Anyway closes the window and the trainer goes on. A new window on the same lab follows
// the run again from its launch record — the curve grows, Stop is offered — and Stop ends
// it cleanly, with a checkpoint.
#include <QDir>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QtTest>

#include "core/train/run_process.h"
#include "tests/journeys/journey_support.h"
#include "widgets/loss_chart.h"
#include "widgets/main_window.h"
#include "widgets/training_panel.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyQuitWhileARunTrains : public QObject {
  Q_OBJECT

  static std::unique_ptr<widgets::MainWindow> openWindow(const QString& lab) {
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    if (!QTest::qWaitForWindowExposed(window.get()) || !window->openLab(lab) || !showPanel(window.get(), "Training")) return {};
    return window;
  }

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void theRunOutlivesTheWindowAndIsFollowedAgain() {
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openWindow(lab.path());
    QVERIFY(window);

    // New Run → a long run on this machine → Start.
    DialogDriver newRun("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      if (!typeInto(waitFor<QLineEdit>(d, "runName"), "goes-on")) return false;
      auto* epochs = waitFor<QDoubleSpinBox>(d, "field_num_train_epochs");
      if (!epochs || !click(epochs)) return false;
      QTest::keyClick(epochs, Qt::Key_A, Qt::ControlModifier);
      QTest::keyClicks(epochs, "1000");  // far longer than this journey
      QTest::keyClick(epochs, Qt::Key_Tab);
      return clickButton(d, "startButton");
    });
    QVERIFY(clickButton(window.get(), "newRunButton"));
    QVERIFY2(newRun.wait(), qPrintable(newRun.error()));
    auto* panel = window->findChild<widgets::TrainingPanel*>("panel_training");
    QVERIFY(panel && !panel->selectedRuns().isEmpty());
    const qint64 id = panel->selectedRuns().front();
    QVERIFY(waitUntil([&] { return panel->chart()->totalLossPoints(id) > 0; }, "the first loss point", kTrainWaitMs));
    const QString runDir = lab.file("runs/goes-on");
    const auto trainer = train::readProcessRecord(runDir.toStdString());
    QVERIFY(trainer && train::processAlive(*trainer).value_or(false));

    // Lab → Quit: the question names the run that keeps training; Cancel keeps the window.
    DialogDriver cancel("QMessageBox", [](QWidget* d) {
      return answerMessageBox(d, "Cancel", "'goes-on' keeps training on this machine");
    });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(cancel.wait(), qPrintable(cancel.error()));
    QTest::qWait(200);  // a quit that went ahead anyway would hide the window by now
    QVERIFY(window->isVisible());

    // Lab → Quit → Quit Anyway: the window goes, the trainer does not.
    DialogDriver quit("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "Quit Anyway", "goes-on"); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(quit.wait(), qPrintable(quit.error()));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QVERIFY2(train::processAlive(*trainer).value_or(false), "quitting the window stopped the trainer");

    // A new window on the lab follows the run again: live curve, Stop offered.
    window = openWindow(lab.path());
    QVERIFY(window);
    panel = window->findChild<widgets::TrainingPanel*>("panel_training");
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(panel && runs);
    int row = -1;
    QVERIFY(waitUntil([&] { return (row = rowWith(runs->model(), {"goes-on", "running"})) >= 0; }, "goes-on listed as running"));
    QTest::mouseClick(runs->viewport(), Qt::LeftButton, {}, runs->visualRect(runs->model()->index(row, 0)).center());
    QVERIFY(waitUntil([&] { return panel->selectedRuns().value(0) == id; }, "goes-on selected"));
    auto* stop = waitFor<QPushButton>(window.get(), "stopButton");
    QVERIFY(stop);
    QVERIFY(waitUntil([&] { return stop->isEnabled(); }, "Stop offered for the run picked up again"));
    int shown = 0;
    QVERIFY(waitUntil([&] { return (shown = panel->chart()->totalLossPoints(id)) > 0; }, "the curve so far"));
    QVERIFY(waitUntil([&] { return panel->chart()->totalLossPoints(id) > shown; }, "a new loss point", kTrainWaitMs));

    // Stop: a clean stop with a checkpoint.
    QVERIFY(clickButton(window.get(), "stopButton"));
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"goes-on", "stopped"}) >= 0; }, "goes-on stopped", kTrainWaitMs));
    QVERIFY(waitUntil([&] { return !train::processAlive(*trainer).value_or(false); }, "the trainer to end"));
    QVERIFY2(!QDir(runDir).entryList({"checkpoint-*"}, QDir::Dirs).isEmpty(), qPrintable(QDir(runDir).entryList().join(' ')));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'goes-on' AND status = 'stopped'"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyQuitWhileARunTrains)
#include "test_journey_quit_while_a_run_trains.moc"
