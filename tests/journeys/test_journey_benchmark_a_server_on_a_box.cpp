// Journey: in Benchmarks the user picks "Server on a box", the lab's box (a real sshd on
// loopback; the box is this machine), our engine, the base model and a LoRA adapter on the
// box, and clicks Run: the real `crosslab-cli serve` starts on the box bound to its
// 127.0.0.1, is reached through an SSH tunnel, answers /health, and a sweep of two
// concurrency levels runs against the adapter through the tunnel; the benchmark row names
// the box. Stop server ends the server on the box.
#include <QComboBox>
#include <QLabel>
#include <QDir>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableView>
#include <QtTest>

#include "loopback_box.h"
#include "tests/journeys/journey_support.h"
#include "tests/support/cli_runner.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyBenchmarkAServerOnABox : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void sweepTwoLevelsAgainstTheBoxThenStopIt() {
    DemoLab lab;
    QVERIFY(lab.ok());
    LoopbackBox box(lab.path());
    QVERIFY2(box.ok(), qPrintable(box.error()));
    // The weights and an adapter are on the box (pushed as a user would, with the CLI).
    const QString model = box.folder() + "/models/demo-base", adapter = box.folder() + "/adapters/demo-lora";
    auto r = testing::runCli({"box", "push", "loop", lab.file("models/demo-base"), model, "--lab", lab.path()});
    QVERIFY2(r.code == 0, r.err.constData());
    QDir().mkpath(adapter);  // (`box push` of a folder wants its parent there)
    r = testing::runCli({"box", "push", "loop", lab.file("runs/demo-lora"), adapter, "--lab", lab.path()});
    QVERIFY2(r.code == 0, r.err.constData());
    const qint64 benchmarksBefore = rowCount(lab.path(), "benchmarks");

    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    QVERIFY(showPanel(window.get(), "Benchmarks"));
    auto* kind = waitFor<QComboBox>(window.get(), "endpointKind");
    QVERIFY(kind);
    kind->setFocus();
    while (kind->currentIndex() < 2) QTest::keyClick(kind, Qt::Key_Down);
    QCOMPARE(kind->currentText(), QString("Server on a box"));
    QVERIFY(waitFor<QComboBox>(window.get(), "serveBox")->currentText() == "loop");
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "serveBoxModel"), model));
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "serveBoxAdapters"), "demo-lora=" + adapter));
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "serveBoxProgram"), crosslab::testing::cliPath()));
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "serveBoxFolder"), box.folder() + "/serve"));
    auto* port = waitFor<QSpinBox>(window.get(), "serveBoxPort");
    port->setFocus();
    QTest::keyClick(port, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(port, QString::number(freeLoopbackPort()));
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "model"), "demo-lora"));  // the adapter, not the base
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "levels"), "1,2"));
    auto* prompts = waitFor<QSpinBox>(window.get(), "numPrompts");
    prompts->setFocus();
    QTest::keyClick(prompts, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(prompts, "4");
    auto* outputLen = waitFor<QSpinBox>(window.get(), "outputLen");
    outputLen->setFocus();
    QTest::keyClick(outputLen, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(outputLen, "16");
    QVERIFY(typeInto(waitFor<QLineEdit>(window.get(), "label"), "loop box, runtime LoRA"));
    QVERIFY(clickButton(window.get(), "runButton"));

    // The server answers through the tunnel; the sweep runs both levels and is recorded.
    const auto serverLog = [&] {
      QFile f(box.folder() + "/serve/output.log");
      auto* status = window->findChild<QLabel*>("statusLabel");
      return (status ? status->text().toUtf8() : QByteArray()) + " | server: " +
             (f.open(QIODevice::ReadOnly) ? f.readAll().right(2000) : QByteArray("(no output.log)"));
    };
    QVERIFY2(waitUntil([&] { return rowCount(lab.path(), "benchmarks") == benchmarksBefore + 1; }, "the benchmark row"),
             serverLog().constData());
    QVERIFY(waitUntil([&] { return rowCount(lab.path(), "benchmark_levels", "benchmark_id = (SELECT max(id) FROM benchmarks)") == 2; },
                      "two levels measured", kTrainWaitMs));
    QCOMPARE(rowCount(lab.path(), "benchmarks",
                      "id = (SELECT max(id) FROM benchmarks) AND box_id = (SELECT id FROM boxes WHERE name = 'loop') "
                      "AND model = 'demo-lora' AND price_per_hour = 2.99"),
             qint64(1));
    QCOMPARE(rowCount(lab.path(), "benchmark_levels",
                      "benchmark_id = (SELECT max(id) FROM benchmarks) AND completed = 4 AND failed = 0"),
             qint64(2));
    // The server's /metrics came through the tunnel too: it counted what the client did (two
    // levels of four 16-token replies).
    auto* server = window->findChild<QLabel*>("serverLabel");
    QVERIFY(server);
    QVERIFY2(waitUntil([&] { return server->text().startsWith("Server, over the sweep: "); },
                       "the server's reading after the sweep"),
             qPrintable(server->text()));
    QVERIFY2(server->text().contains("128 tokens generated (the client counted 128)"), qPrintable(server->text()));
    const QString serveDir = box.folder() + "/serve";
    QVERIFY(LoopbackBox::pidFileAlive(serveDir + "/child_pid"));  // the server stays up for the next sweep

    QVERIFY(clickButton(window.get(), "stopBoxServerButton"));
    QVERIFY(waitUntil([&] { return !LoopbackBox::pidFileAlive(serveDir + "/child_pid") && !LoopbackBox::pidFileAlive(serveDir + "/pid"); },
                      "the server gone from the box"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyBenchmarkAServerOnABox)
#include "test_journey_benchmark_a_server_on_a_box.moc"
