// Journey: the user opens New Run, picks the lab's box (a real sshd on loopback; the box
// is this machine), checks it (preflight: weights hashed, to push, disk, secrets), starts;
// the run appears at once, the weights are pushed, the real `crosslab-cli train` runs
// detached on the box, its loss curve draws live in the window from the box's
// events.jsonl, the run finishes, and the adapter comes home into the lab's runs/<name>/.
// The user's wait from Start to the first loss point is printed (timing).
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTableView>
#include <QtTest>

#include "loopback_box.h"
#include "tests/journeys/journey_support.h"
#include "tests/support/cli_runner.h"
#include "widgets/loss_chart.h"
#include "widgets/main_window.h"
#include "widgets/training_panel.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

// Types into a spin box as a user does: select all, type.
void typeNumber(QAbstractSpinBox* spin, const QString& text) {
  spin->setFocus();
  QTest::keyClick(spin, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(spin, text);
  QTest::keyClick(spin, Qt::Key_Tab);
}

}  // namespace

class TestJourneyTrainOnABox : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void newRunOnTheBoxDrawsItsCurveAndBringsTheAdapterHome() {
    DemoLab lab;
    QVERIFY(lab.ok());
    LoopbackBox box(lab.path());
    QVERIFY2(box.ok(), qPrintable(box.error()));

    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QVERIFY(showPanel(window.get(), "Training"));

    QElapsedTimer sinceStart;
    DialogDriver newRun("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      if (!typeInto(d->findChild<QLineEdit*>("runName"), "on-the-box")) return false;
      typeNumber(d->findChild<QDoubleSpinBox*>("field_num_train_epochs"), "0.1");  // ceil(0.1 × 37) = 4 steps
      const QString text = box.chooseInNewRun(d);
      if (!text.contains("hashed (SHA-256)") || !text.contains("to push") || !text.contains("secrets")) return false;
      sinceStart.start();
      return clickButton(d, "startButton");
    });
    QVERIFY(clickButton(window.get(), "newRunButton"));
    QVERIFY2(newRun.wait(), qPrintable(newRun.error()));

    // The run is in the list at once, on the box.
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(runs);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"on-the-box"}) >= 0; }, "the run in the list"));
    auto* panel = window->findChild<widgets::TrainingPanel*>("panel_training");
    QVERIFY(panel);
    const qint64 id = lab.path().isEmpty() ? 0 : [&] {
      const auto ids = panel->selectedRuns();
      return ids.isEmpty() ? qint64(0) : ids.front();
    }();
    QVERIFY(id > 0);
    // The live curve: loss points from the box's events.jsonl, tailed over SSH.
    QVERIFY(waitUntil([&] { return panel->chart()->totalLossPoints(id) > 0; }, "the first loss point", kTrainWaitMs));
    qInfo("timing: New Run Start to the first loss point on the loopback box: %.1f s", sinceStart.elapsed() / 1000.0);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"on-the-box", "finished"}) >= 0; }, "the run finished",
                      kTrainWaitMs));
    QVERIFY(waitUntil([&] { return panel->chart()->totalLossPoints(id) == 4; }, "every step on the curve"));
    // The adapter came home into the lab, as the box wrote it.
    const QString home = lab.file("runs/on-the-box");
    QVERIFY(waitUntil([&] { return QFile::exists(home + "/adapter_model.safetensors"); }, "the adapter fetched"));
    QVERIFY(QFile::exists(home + "/adapter_config.json"));
    QVERIFY(QFile::exists(home + "/recipe.json"));
    QFile a(home + "/adapter_model.safetensors"), b(box.folder() + "/runs/on-the-box/output/adapter_model.safetensors");
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    QCOMPARE(a.readAll(), b.readAll());
    // The weights went to the box's models folder once.
    QVERIFY(QFile::exists(box.folder() + "/models/demo-base/model.safetensors"));

    // The box bills ($2.99/h): Quit asks whether to tear it down; it is this machine, leave it.
    DialogDriver billing("QMessageBox", [](QWidget* d) {
      return d->objectName() == "billingQuestion" && answerMessageBox(d, "Leave running");
    });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(billing.wait(), qPrintable(billing.error()));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'on-the-box' AND status = 'finished' AND box_id IS NOT NULL"), qint64(1));
    QCOMPARE(rowCount(lab.path(), "metrics", "run_id = (SELECT id FROM runs WHERE name = 'on-the-box')"), qint64(4));
    // The box's life holds the run as finished work and the weights it was sent (the ledger).
    QCOMPARE(rowCount(lab.path(), "box_work",
                      "kind = 'train' AND status = 'finished' AND run_id = (SELECT id FROM runs WHERE name = 'on-the-box')"),
             qint64(1));
    QCOMPARE(rowCount(lab.path(), "box_transfers", "direction = 'push' AND what LIKE 'weights -> %' AND bytes > 0"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyTrainOnABox)
#include "test_journey_train_on_a_box.moc"
