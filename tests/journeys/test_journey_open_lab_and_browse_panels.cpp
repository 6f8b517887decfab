// Journey: the user starts crosslab, opens a lab with Lab → Open Lab… (typing its folder
// into the file dialog), looks through the panels by clicking the sidebar, and quits with
// Lab → Quit. What each panel shows comes from the lab; browsing writes nothing but the
// window's own settings, and the lab stays sound.
#include <QLabel>
#include <QStackedWidget>
#include <QTableView>
#include <QtTest>

#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyOpenLabAndBrowsePanels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void openLabFromTheMenuAndBrowse() {
    DemoLab lab;
    QVERIFY(lab.ok());
    const qint64 samples = rowCount(lab.path(), "samples"), verdicts = rowCount(lab.path(), "verdicts");
    QCOMPARE(samples, qint64(60));

    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    auto* labStatus = waitFor<QLabel>(window.get(), "labStatus");
    QVERIFY(labStatus);
    QCOMPARE(labStatus->text(), QString("No lab open"));

    DialogDriver open("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, lab.path()); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Open Lab…"));
    QVERIFY2(open.wait(), qPrintable(open.error()));
    QVERIFY(waitUntil([&] { return labStatus->text().contains(lab.path()); }, "the status bar to name the lab"));
    QVERIFY(window->windowTitle().startsWith("demo"));

    // Training: the demo's LoRA run, finished, with its 4 steps.
    QVERIFY(showPanel(window.get(), "Training"));
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(runs);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"demo-lora", "finished", "4 / 4"}) >= 0; },
                      "demo-lora listed as finished, 4 / 4 steps"));

    // Review: the demo eval set with both models' answers.
    QVERIFY(showPanel(window.get(), "Review"));
    auto* review = waitFor<QLabel>(window.get(), "reviewStatus");
    QVERIFY(review);
    QVERIFY(waitUntil([&] { return review->text().startsWith("30 questions, 60 outputs of 2 models"); },
                      "Review to show the demo's 30 questions"));

    // Every panel of the sidebar can be shown.
    auto* stack = window->findChild<QStackedWidget*>("panels");
    for (const QString title : {"Venues", "Benchmarks", "Ledger", "Training"}) {
      QVERIFY(showPanel(window.get(), title));
      QCOMPARE(window->panelTitle(window->currentPanel()), title);
      QVERIFY(stack->currentWidget()->isVisible());
    }

    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "samples"), samples);
    QCOMPARE(rowCount(lab.path(), "verdicts"), verdicts);
  }
};

QTEST_MAIN(TestJourneyOpenLabAndBrowsePanels)
#include "test_journey_open_lab_and_browse_panels.moc"
