// Journey: the window (a real `crosslab` window in its own process, driven by its own
// widgets) runs a local `crosslab-cli serve` for Benchmarks and a local training run; then
// the session ends — SIGTERM (a logout), or SIGKILL (a crash). The server goes with the
// window, whatever the signal; the trainer does not (it is detached on purpose, and Stop is
// the only way to end it from the window).
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include "tests/journeys/journey_support.h"

using namespace crosslab::journey;

namespace {

qint64 readPid(QProcess& p, const QByteArray& prefix, int timeoutMs) {
  QByteArray seen;
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeoutMs) {
    p.waitForReadyRead(500);
    seen += p.readAllStandardOutput();
    for (const auto& line : seen.split('\n'))
      if (line.startsWith(prefix)) return line.mid(prefix.size()).trimmed().toLongLong();
    if (p.state() == QProcess::NotRunning) break;
  }
  qWarning("no '%s' line; output: %s; errors: %s", prefix.constData(), seen.constData(), p.readAllStandardError().right(2000).constData());
  return 0;
}

bool alive(qint64 pid) { return pid > 0 && ::kill(pid_t(pid), 0) == 0; }

}  // namespace

class TestJourneySignalTheWindowWithALocalServer : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void signalledWindowLeavesNoServer_data() {
    QTest::addColumn<int>("signal");
    QTest::newRow("SIGTERM (logout)") << int(SIGTERM);
    QTest::newRow("SIGINT") << int(SIGINT);
    QTest::newRow("SIGKILL (crash)") << int(SIGKILL);
  }

  void signalledWindowLeavesNoServer() {
    QFETCH(int, signal);
    DemoLab lab;
    QVERIFY(lab.ok());
    QProcess window;
    // The helper's own temporary folders land here: killed (SIGKILL) it cannot remove them.
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("TMPDIR", tmp.path());
    window.setProcessEnvironment(env);
    window.start(WINDOW_WITH_LOCAL_SERVER, {lab.path()});
    QVERIFY(window.waitForStarted());
    const qint64 server = readPid(window, "server pid ", kTrainWaitMs);
    QVERIFY(server > 0);
    QVERIFY(alive(server));
    QCOMPARE(::kill(pid_t(window.processId()), signal), 0);
    QVERIFY(window.waitForFinished(kWaitMs));
    if (signal != SIGKILL) {  // caught: the window closed through its event loop, not by the signal
      QCOMPARE(window.exitStatus(), QProcess::NormalExit);
      QCOMPARE(window.exitCode(), 0);
    }
    QVERIFY2(waitUntil([&] { return !alive(server); }, "the server to go with the window", kWaitMs),
             "a local server outlived its window");
  }

  void trainerOutlivesTheWindow() {
    DemoLab lab;
    QVERIFY(lab.ok());
    QProcess window;
    window.start(WINDOW_WITH_LOCAL_SERVER, {lab.path(), "--train"});
    QVERIFY(window.waitForStarted());
    const qint64 trainer = readPid(window, "trainer pid ", kTrainWaitMs);
    QVERIFY(trainer > 0);
    const qint64 server = readPid(window, "server pid ", kTrainWaitMs);
    QVERIFY(server > 0);
    QCOMPARE(::kill(pid_t(window.processId()), SIGTERM), 0);
    QVERIFY(window.waitForFinished(kWaitMs));
    QVERIFY(waitUntil([&] { return !alive(server); }, "the server to go with the window", kWaitMs));
    QVERIFY2(alive(trainer), "closing the window killed the trainer");
    QCOMPARE(rowCount(lab.path(), "runs", "name = 'outlives-the-window' AND status IN ('pending', 'running')"), qint64(1));
    ::kill(pid_t(trainer), SIGTERM);  // a clean stop (checkpoint) so the test leaves nothing behind
    QVERIFY(waitUntil([&] { return !alive(trainer); }, "the trainer to stop on SIGTERM", kWaitMs));
  }
};

QTEST_MAIN(TestJourneySignalTheWindowWithALocalServer)
#include "test_journey_signal_the_window_with_a_local_server.moc"
