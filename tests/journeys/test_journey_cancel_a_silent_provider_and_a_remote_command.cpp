// Journey: the provider accepts the connection and never answers; the user clicks Cancel
// and the window is usable again at once, nothing stale left to rent. Then, on a box
// added through Add box… (a real sshd on loopback), a long command runs; Cancel ends its
// processes on the box and says so — no process is left behind.
#include <QAbstractButton>
#include <QDir>
#include <QFile>
#include <QPlainTextEdit>
#include <QtTest>

#include <chrono>

#include "misbehaving_server.h"
#include "sshd_fixture.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

// Processes of this user whose command line is exactly `cmdline` (NUL-separated argv).
int processesRunning(const QByteArray& cmdline) {
  int n = 0;
  for (const QString& pid : QDir("/proc").entryList(QDir::Dirs)) {
    QFile f("/proc/" + pid + "/cmdline");
    if (f.open(QIODevice::ReadOnly) && f.readAll() == cmdline) ++n;
  }
  return n;
}

}  // namespace

class TestJourneyCancel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void cancelStopsASilentProviderAndARemoteCommand() {
    MisbehavingServer silent;
    QVERIFY(silent.start() > 0);
    silent.script({MisbehavingServer::silence()});
    SshdFixture sshd;
    QString why;
    QVERIFY2(sshd.start(&why), qPrintable(why));
    qputenv("CROSSLAB_JOURNEY_HOTAISLE_KEY", "any-key-0123456789");
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(fillProviderForm(window.get(), QString::fromStdString(silent.url()), "lab", "CROSSLAB_JOURNEY_HOTAISLE_KEY"));

    // A silent provider: Cancel answers at once (the bound alone would take 90 s).
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    QVERIFY(waitUntil([&] { return silent.requests() == 1; }, "the offers request sent"));
    auto* fetch = window->findChild<QAbstractButton*>("fetchOffersButton");
    QVERIFY(fetch && !fetch->isEnabled());
    const auto asked = std::chrono::steady_clock::now();
    QVERIFY(clickButton(window.get(), "venuesCancel"));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).startsWith("cancelled"); }, "the fetch cancelled"));
    qInfo("Cancel on a silent provider answered after %.0f ms",
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count());
    QVERIFY(findButton(window.get(), "fetchOffersButton")->isEnabled());
    QCOMPARE(waitFor<QTableView>(window.get(), "offersTable")->model()->rowCount(), 0);
    QCOMPARE(silent.requests(), 1);

    // Add box…: the loopback sshd, through the dialog's own fields.
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    QVERIFY(addLoopbackBox(window.get(), sshd, "loop"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {"loop"}) >= 0; }, "the added box"));
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {"loop"})));

    // A long command; Cancel ends its processes on the box.
    const QByteArray sleeper("sleep\0" "317\0", 10);
    QCOMPARE(processesRunning(sleeper), 0);
    auto* command = waitFor<QLineEdit>(window.get(), "commandEdit");
    QVERIFY(typeInto(command, "echo started; sleep 317; echo never"));
    DialogDriver hostKey("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "SHA256:"); });
    QTest::keyClick(command, Qt::Key_Return);
    QVERIFY2(hostKey.wait(), qPrintable(hostKey.error()));
    auto* log = waitFor<QPlainTextEdit>(window.get(), "boxLog");
    QVERIFY(waitUntil([&] { return log->toPlainText().contains("started"); }, "the command started"));
    QVERIFY(waitUntil([&] { return processesRunning(sleeper) == 1; }, "the sleep running on the box"));
    QVERIFY(clickButton(window.get(), "venuesCancel"));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains("were ended"); }, "the command's processes ended"));
    QVERIFY(waitUntil([&] { return processesRunning(sleeper) == 0; }, "no sleep left on the box"));
    QVERIFY2(log->toPlainText().count("never") == 1, qPrintable(log->toPlainText()));  // the command line only
    QVERIFY(log->toPlainText().contains("process group"));
    QVERIFY(!log->toPlainText().contains("[exit"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyCancel)
#include "test_journey_cancel_a_silent_provider_and_a_remote_command.moc"
