// Journey (issue #11, item 8, freshness): the window stays open on a lab while the user
// works in a shell — `crosslab-cli box add`, `train --lab`, `serve` + `bench --lab`,
// `eval check --lab` — and every panel shows what the shell wrote without being told
// (LabSession::labDataChanged, from PRAGMA data_version), keeping the user's place.
#include <QLabel>
#include <QTableView>
#include <QTreeView>
#include <QtTest>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyShellWritesShowUpInEveryPanel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void everyPanelShowsWhatTheShellWrote() {
    DemoLab lab;
    QVERIFY(lab.ok());
    QVERIFY(!lab.writeOutputs("outputs-shell.jsonl", "demo-shell").isEmpty());
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QSignalSpy changes(window->session(), &backends::LabSession::labDataChanged);

    // Venues: a box recorded by the shell.
    QVERIFY(showPanel(window.get(), "Venues"));
    auto* boxes = window->findChild<QTableView*>("boxesTable");
    QVERIFY(boxes);
    QVERIFY(runCliBesideWindow({"box", "add", "shell-box", "--host", "127.0.0.1", "--port", "2222", "--user", "lab", "--lab", lab.path()})
                .code == 0);
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {"shell-box"}) >= 0; }, "shell-box in Venues"));
    // (Venues also re-reads its boxes each second on its own, so the row may show first.)
    QVERIFY(waitUntil([&] { return !changes.isEmpty(); }, "labDataChanged after the shell's write"));

    // Training: a run trained by the shell.
    QVERIFY(showPanel(window.get(), "Training"));
    auto* runs = waitFor<QTableView>(window.get(), "runsTable");
    QVERIFY(runs);
    QVERIFY(runCliBesideWindow({"train", "--model", lab.file("models/demo-base"), "--data", lab.file("data/demo_train.json"), "--out",
                    lab.file("runs/shell-run"), "--lab", lab.path(), "--max-steps", "2"})
                .code == 0);
    QVERIFY(waitUntil([&] { return rowWith(runs->model(), {"shell-run", "finished", "2 / 2"}) >= 0; },
                      "shell-run in Training, finished"));

    // Benchmarks: a sweep by the shell against a real local server.
    QVERIFY(showPanel(window.get(), "Benchmarks"));
    auto* results = waitFor<QTableView>(window.get(), "resultsTable");
    QVERIFY(results);
    const int before = results->model()->rowCount();
    QProcess server;
    testing::startCli(server, {"serve", "--model", lab.file("models/demo-base"), "--port", "0", "--max-model-len", "256"});
    QVERIFY(server.waitForStarted());
    QByteArray line;
    QVERIFY(waitUntil(
        [&] {
          line += server.readAllStandardOutput();
          return line.contains('\n');
        },
        "the server's address"));
    QVERIFY2(line.startsWith("listening on http://127.0.0.1:"), line.constData());
    const QString url = QString::fromUtf8(line.trimmed().mid(QByteArray("listening on ").size()));
    const auto bench = runCliBesideWindow({"bench", "--url", url, "--model", "demo-base", "--concurrency", "1", "--num-prompts", "2",
                               "--input-len", "8", "--output-len", "8", "--label", "shell-sweep", "--lab", lab.path()});
    server.terminate();
    QVERIFY(server.waitForFinished(kWaitMs));
    QCOMPARE(bench.code, 0);
    QVERIFY(waitUntil([&] { return rowWith(results->model(), {"shell-sweep"}) >= 0; }, "shell-sweep in Benchmarks"));
    QCOMPARE(results->model()->rowCount(), before + 1);

    // Review: outputs checked into the lab by the shell; the user's question stays put.
    QVERIFY(showPanel(window.get(), "Review"));
    auto* status = waitFor<QLabel>(window.get(), "reviewStatus");
    auto* questions = waitFor<QTreeView>(window.get(), "reviewQuestions");
    QVERIFY(status && questions);
    QVERIFY(waitUntil([&] { return status->text().contains("of 2 models"); }, "the demo's outputs in Review"));
    QTest::keyClick(questions, Qt::Key_J);
    QTest::keyClick(questions, Qt::Key_J);
    QCOMPARE(questions->currentIndex().row(), 2);
    QVERIFY(runCliBesideWindow({"eval", "check", "--eval", lab.file("data/demo_eval.jsonl"), "--outputs", lab.file("outputs-shell.jsonl"),
                    "--lab", lab.path()})
                .code == 0);
    QVERIFY(waitUntil([&] { return status->text().contains("of 3 models"); }, "the shell's outputs in Review"));
    QCOMPARE(questions->currentIndex().row(), 2);

    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }

  void ownWritesDoNotEchoAndForeignOnesAreCoalesced() {
    DemoLab lab;
    QVERIFY(lab.ok());
    backends::LabSession session;
    QString error;
    QVERIFY2(session.requestOpen(lab.path(), &error), qPrintable(error));
    session.setFreshnessInterval(24 * 3600 * 1000);  // only the explicit looks below
    QSignalSpy changes(&session, &backends::LabSession::labDataChanged);
    session.store()->addEvent(std::nullopt, std::nullopt, "t", "our own write");
    session.checkNow();
    QCOMPARE(changes.count(), 0);  // the writer already knows
    for (int i = 0; i < 3; ++i)     // three commits by other processes between two looks …
      QVERIFY(runCliBesideWindow({"box", "add", QString("b%1").arg(i), "--host", "h", "--user", "u", "--lab", lab.path()}).code == 0);
    session.checkNow();
    QCOMPARE(changes.count(), 1);  // … are one change
    session.checkNow();
    QCOMPARE(changes.count(), 1);
  }
};

QTEST_MAIN(TestJourneyShellWritesShowUpInEveryPanel)
#include "test_journey_shell_writes_show_up_in_every_panel.moc"
