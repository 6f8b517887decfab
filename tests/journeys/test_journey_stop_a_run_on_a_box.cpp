// Journey: a run trains on the lab's box (a real sshd on loopback; the box is this
// machine); the user selects it and clicks Stop. The trainer on the box gets SIGTERM,
// writes a checkpoint and ends; nothing of the run is left running on the box; the run
// reads "stopped" with the step it reached.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QtTest>

#include <QDir>

#include "loopback_box.h"
#include "tests/journeys/journey_support.h"
#include "tests/support/cli_runner.h"
#include "widgets/main_window.h"
#include "widgets/training_panel.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyStopARunOnABox : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void stopEndsTheRunOnTheBox() {
    DemoLab lab;
    QVERIFY(lab.ok());
    LoopbackBox box(lab.path());
    QVERIFY2(box.ok(), qPrintable(box.error()));
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QVERIFY(showPanel(window.get(), "Training"));

    DialogDriver newRun("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      if (!typeInto(d->findChild<QLineEdit*>("runName"), "long-on-the-box")) return false;
      if (box.chooseInNewRun(d).isEmpty()) return false;
      return clickButton(d, "startButton");  // the lab recipe: 111 steps, far longer than this journey
    });
    QVERIFY(clickButton(window.get(), "newRunButton"));
    QVERIFY2(newRun.wait(), qPrintable(newRun.error()));

    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(runs);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"long-on-the-box", "running"}) >= 0; }, "the run running",
                      kTrainWaitMs));
    auto* panel = window->findChild<widgets::TrainingPanel*>("panel_training");
    QVERIFY(waitUntil([&] { return rowCount(lab.path(), "metrics", "run_id = (SELECT id FROM runs WHERE name = 'long-on-the-box')") >= 1; },
                      "a step logged on the box", kTrainWaitMs));
    const QString work = box.folder() + "/runs/long-on-the-box";
    QVERIFY(LoopbackBox::pidFileAlive(work + "/child_pid"));  // the trainer, on the box

    QVERIFY(clickButton(window.get(), "stopButton"));
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"long-on-the-box", "stopped"}) >= 0; }, "the run stopped",
                      kWaitMs));
    // Nothing of the run is left on the box: not the trainer, not its wrapper.
    QVERIFY(waitUntil([&] { return !LoopbackBox::pidFileAlive(work + "/child_pid") && !LoopbackBox::pidFileAlive(work + "/pid"); },
                      "the run's processes gone from the box"));
    QVERIFY2(!QDir(work + "/output").entryList({"checkpoint-*"}, QDir::Dirs).isEmpty(),
             "a clean stop writes a checkpoint");
    QVERIFY(waitUntil([&] { return panel->statusText().contains("stopped"); }, "the status line"));

    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'long-on-the-box' AND status = 'stopped'"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyStopARunOnABox)
#include "test_journey_stop_a_run_on_a_box.moc"
