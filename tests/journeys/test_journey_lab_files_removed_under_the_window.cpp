// Journey (issue #11, the guard in depth): while the window is open on a lab and a shell
// trainer writes to it, another program deletes the lab's -wal and -shm (what a last
// closer without SQLITE_FCNTL_PERSIST_WAL does when it believes it is alone). Nothing may
// go on writing into the deleted files: the window says so loudly and refuses the next
// verdict with the reason; the trainer exits 1 naming it; what was committed before is
// intact and the lab reopens sound.
#include <QLabel>
#include <QTreeView>
#include <QtTest>

#include <filesystem>

#include "backends/lab_session.h"
#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyLabFilesRemovedUnderTheWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void windowAndTrainerStopWritingLoudly() {
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QVERIFY(showPanel(window.get(), "Review"));
    auto* status = waitFor<QLabel>(window.get(), "reviewStatus");
    QVERIFY(status);
    QVERIFY(waitUntil([&] { return status->text().contains("of 2 models"); }, "the demo's outputs in Review"));
    const qint64 pairsBefore = rowCount(lab.path(), "verdicts", "instrument = 'human:pair'");

    // A shell trainer (all 111 steps: it is still running when the files go).
    QProcess trainer;
    testing::startCli(trainer, {"train", "--model", lab.file("models/demo-base"), "--data", lab.file("data/demo_train.json"),
                                "--out", lab.file("runs/shell-run"), "--lab", lab.path()});
    QVERIFY(trainer.waitForStarted(kWaitMs));
    QVERIFY(waitUntil([&] { return rowCount(lab.path(), "metrics", "run_id = (SELECT id FROM runs WHERE name = 'shell-run')") >= 1; },
                      "the trainer's first step in the lab", kTrainWaitMs));

    std::filesystem::remove(lab.file("lab.sqlite-wal").toStdString());
    std::filesystem::remove(lab.file("lab.sqlite-shm").toStdString());

    // The window: a loud dialog, the status bar, and a verdict refused with the reason.
    DialogDriver lost("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "OK", "stopped writing"); });
    QVERIFY2(lost.wait(), qPrintable(lost.error()));
    auto* labStatus = waitFor<QLabel>(window.get(), "labStatus");
    QVERIFY(labStatus && labStatus->text().contains("stopped"));
    QVERIFY(!window->session()->filesLost().isEmpty());
    auto* questions = waitFor<QTreeView>(window.get(), "reviewQuestions");
    QVERIFY(questions);
    QTest::keyClick(questions, Qt::Key_1);
    QVERIFY(waitUntil([&] { return status->text().contains("writing stopped"); }, "Review to name the refusal"));

    // The trainer: exit 1, the reason on stderr.
    QVERIFY(waitUntil([&] { return trainer.state() == QProcess::NotRunning; }, "the trainer to stop", kTrainWaitMs));
    const QByteArray err = trainer.readAllStandardError();
    QCOMPARE(trainer.exitStatus(), QProcess::NormalExit);
    QCOMPARE(trainer.exitCode(), 1);
    QVERIFY2(err.contains("lab.sqlite-wal was deleted") && err.contains("writing stopped"), err.constData());

    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "verdicts", "instrument = 'human:pair'"), pairsBefore);
    QCOMPARE(rowCount(lab.path(), "samples"), qint64(60));
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'demo-lora' AND status = 'finished'"), qint64(1));
  }
};

QTEST_MAIN(TestJourneyLabFilesRemovedUnderTheWindow)
#include "test_journey_lab_files_removed_under_the_window.moc"
