// Journey: with the window open on a lab, the user imports outputs in Review (the file
// dialog opens on the lab folder), then runs `crosslab-cli train … --lab LAB` in a shell
// to its end, then gives a verdict in the window and quits.
//
// Issue #11's shortest reproduction of the corruption: the file dialog typed the lab's
// database files by content (QMimeDatabase opened and closed lab.sqlite, -wal and -shm in
// this process), which dropped the POSIX locks of the window's SQLite connections; the
// trainer's last close then believed it was alone, checkpointed and deleted the WAL under
// the window. Afterwards the window must still hold the live files (no descriptor of a
// deleted or replaced -wal/-shm), its verdict must be visible to other processes, and the
// lab must pass integrity_check with every row the window wrote.
#include <QLabel>
#include <QTableView>
#include <QTreeView>
#include <QtTest>

#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyImportOutputsThenTrainInShell : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void importOutputsThenShellTrainerLeavesTheLabSound() {
    DemoLab lab;
    QVERIFY(lab.ok());
    QVERIFY(!lab.writeOutputs("outputs-third.jsonl", "demo-third").isEmpty());

    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));

    // Review: the lab's eval set loads by itself; Import Outputs… opens on the lab folder.
    QVERIFY(showPanel(window.get(), "Review"));
    auto* status = waitFor<QLabel>(window.get(), "reviewStatus");
    QVERIFY(status);
    QVERIFY(waitUntil([&] { return status->text().contains("of 2 models"); }, "the demo's outputs in Review"));
    DialogDriver fileDialog("QFileDialog", [](QWidget* d) { return chooseInFileDialog(d, "outputs-third.jsonl"); });
    QVERIFY(clickButton(window.get(), "importOutputsButton"));
    QVERIFY2(fileDialog.wait(), qPrintable(fileDialog.error()));
    QVERIFY(waitUntil([&] { return status->text().contains("of 3 models"); }, "the imported outputs in Review"));
    QCOMPARE(rowCount(lab.path(), "samples", "model = 'demo-third'"), qint64(30));
    QVERIFY2(labLocksLost(lab.path()).isEmpty(), qPrintable("after the file dialog: " + labLocksLost(lab.path())));

    // A shell trainer runs to its end against the open lab.
    const auto train = runCliBesideWindow({"train", "--model", lab.file("models/demo-base"), "--data", lab.file("data/demo_train.json"),
                               "--out", lab.file("runs/shell-run"), "--lab", lab.path(), "--max-steps", "3"});
    QCOMPARE(train.code, 0);
    const QStringList stale = staleLabDescriptors(lab.path());
    QVERIFY2(stale.isEmpty(), qPrintable("the window holds lab files that are gone from disk: " + stale.join("; ")));

    // The window writes after the trainer: a pair verdict by key; other processes see it.
    const qint64 verdictsBefore = rowCount(lab.path(), "verdicts", "instrument = 'human:pair'");
    auto* questions = waitFor<QTreeView>(window.get(), "reviewQuestions");
    QVERIFY(questions);
    QTest::keyClick(questions, Qt::Key_1);
    QCOMPARE(rowCount(lab.path(), "verdicts", "instrument = 'human:pair'"), verdictsBefore + 1);

    // Training lists the shell's run, finished.
    QVERIFY(showPanel(window.get(), "Training"));
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(runs);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"shell-run", "finished"}) >= 0; },
                      "the shell's run listed as finished"));

    // Lab → Quit; then the lab as any other process reads it.
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "verdicts", "instrument = 'human:pair'"), verdictsBefore + 1);
    QCOMPARE(rowCount(lab.path(), "samples", "model = 'demo-third'"), qint64(30));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'shell-run' AND status = 'finished'"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyImportOutputsThenTrainInShell)
#include "test_journey_import_outputs_then_train_in_shell.moc"
