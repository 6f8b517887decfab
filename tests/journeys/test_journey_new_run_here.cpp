// Journey: New Run on this machine, in the demo lab. The dialog proposes the lab's own base
// model and training set; the demo's run name is refused (a run is never written over) and
// Start stays disabled with the reason shown; the demo run's recipe is reused in one
// choice; Start writes runs/<name>/recipe.json and starts `crosslab-cli train --recipe`
// detached; the curve draws live; the run finishes beside the demo run, which is
// untouched. The next New Run proposes the last choice. Timing: Start to the first loss
// point on this machine.
#include <QComboBox>
#include <QCryptographicHash>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QtTest>

#include "tests/journeys/journey_support.h"
#include "widgets/loss_chart.h"
#include "widgets/main_window.h"
#include "widgets/training_panel.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {
QByteArray sha(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256) : QByteArray();
}
}  // namespace

class TestJourneyNewRunHere : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void newRunProposesRefusesReusesAndTrains() {
    DemoLab lab;
    QVERIFY(lab.ok());
    const QByteArray demoEvents = sha(lab.file("runs/demo-lora/events.jsonl"));
    QVERIFY(!demoEvents.isEmpty());
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QVERIFY(showPanel(window.get(), "Training"));

    QElapsedTimer sinceStart;
    DialogDriver newRun("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      // The lab's own model and training set, proposed.
      if (d->findChild<QComboBox*>("field_model_name_or_path")->currentText() != "models/demo-base") return false;
      if (d->findChild<QComboBox*>("field_dataset_file")->currentText() != "data/demo_train.json") return false;
      // The demo's run name: refused, Start disabled, the reason shown.
      auto* name = d->findChild<QLineEdit*>("runName");
      auto* start = d->findChild<QPushButton*>("startButton");
      auto* problems = d->findChild<QLabel*>("problems");
      if (!typeInto(name, "demo-lora")) return false;
      if (start->isEnabled() || !problems->text().contains("already has a run named 'demo-lora'")) return false;
      // Reuse the demo run's recipe: one choice in "Start from".
      auto* source = d->findChild<QComboBox*>("recipeSource");
      source->setFocus();
      while (!source->currentText().startsWith("Recipe of demo-lora") && source->currentIndex() < source->count() - 1)
        QTest::keyClick(source, Qt::Key_Down);
      if (!source->currentText().startsWith("Recipe of demo-lora")) return false;
      if (d->findChild<QSpinBox*>("field_lora_rank")->value() != 16) return false;
      if (!typeInto(name, "second")) return false;
      auto* epochs = d->findChild<QDoubleSpinBox*>("field_num_train_epochs");
      epochs->setFocus();
      QTest::keyClick(epochs, Qt::Key_A, Qt::ControlModifier);
      QTest::keyClicks(epochs, "0.1");
      QTest::keyClick(epochs, Qt::Key_Tab);
      if (!start->isEnabled()) return false;
      sinceStart.start();
      return clickButton(d, "startButton");
    });
    QVERIFY(clickButton(window.get(), "newRunButton"));
    QVERIFY2(newRun.wait(), qPrintable(newRun.error()));

    auto* panel = window->findChild<widgets::TrainingPanel*>("panel_training");
    QVERIFY(panel);
    const auto ids = panel->selectedRuns();
    QVERIFY(!ids.isEmpty());
    const qint64 id = ids.front();
    QVERIFY(QFile::exists(lab.file("runs/second/recipe.json")));
    QVERIFY(waitUntil([&] { return panel->chart()->totalLossPoints(id) > 0; }, "the first loss point", kTrainWaitMs));
    qInfo("timing: New Run Start to the first loss point on this machine: %.1f s", sinceStart.elapsed() / 1000.0);
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"second", "finished"}) >= 0; }, "the run finished", kTrainWaitMs));
    QVERIFY(QFile::exists(lab.file("runs/second/adapter_model.safetensors")));
    QCOMPARE(sha(lab.file("runs/demo-lora/events.jsonl")), demoEvents);  // the demo run untouched

    // The next New Run proposes the last choice.
    DialogDriver again("crosslab::widgets::NewRunDialog", [&](QWidget* d) {
      const bool last = d->findChild<QComboBox*>("recipeSource")->currentText() == "Last choice" &&
                        d->findChild<QComboBox*>("field_dataset_file")->currentText() == "data/demo_train.json" &&
                        qFuzzyCompare(d->findChild<QDoubleSpinBox*>("field_num_train_epochs")->value(), 0.1);
      QTest::keyClick(d, Qt::Key_Escape);
      return last;
    });
    QVERIFY(clickButton(window.get(), "newRunButton"));
    QVERIFY2(again.wait(), qPrintable(again.error()));

    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'demo-lora'"), qint64(1));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'second' AND status = 'finished'"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyNewRunHere)
#include "test_journey_new_run_here.moc"
