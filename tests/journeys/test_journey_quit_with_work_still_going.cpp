// Journey (issue #11, close guards): the user quits or switches labs while something is
// still going. Panels register close guards on the LabSession (a billing box, a running
// trainer …); the window asks them before it quits, closes or switches the lab, names every
// concern in one question, and Cancel keeps everything as it was. A desktop logout (SIGTERM
// to the real `crosslab` process) quits cleanly through the event loop, asking nothing.
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QtTest>

#include <csignal>

#include "backends/lab_session.h"
#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;
using Reason = backends::LabSession::CloseReason;

class TestJourneyQuitWithWorkStillGoing : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void guardsAreAskedBeforeQuittingOrSwitching() {
    DemoLab lab, other;
    QVERIFY(lab.ok() && other.ok());
    auto window = std::make_unique<widgets::MainWindow>();
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    QVERIFY(window->openLab(lab.path()));
    auto* session = window->session();
    auto owner = std::make_unique<QObject>();
    QList<Reason> asked;
    session->addCloseGuard(owner.get(), [&asked](Reason r) {
      asked << r;
      return QString("box gpu-1 is still billing ($2.99/h)");
    });
    session->addCloseGuard(window.get(), [](Reason) { return QString(); });  // a guard with no concern
    // A close check holds its own dialog (as Venues does for billing boxes): it refuses once.
    QList<Reason> checked;
    session->addCloseCheck(owner.get(), [&checked](Reason r) {
      checked << r;
      return checked.size() > 1;
    });
    QSignalSpy closing(session, &backends::LabSession::labClosing);

    // Lab → Quit, Cancel: nothing happens.
    DialogDriver cancelQuit("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "Cancel", "gpu-1 is still billing"); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(cancelQuit.wait(), qPrintable(cancelQuit.error()));
    QTest::qWait(200);  // a quit that went ahead anyway would hide the window by now
    QVERIFY(window->isVisible());
    QCOMPARE(asked, QList<Reason>{Reason::Quit});
    QVERIFY(checked.isEmpty());  // Cancel on the question: no check runs
    QCOMPARE(closing.count(), 0);

    // Lab → Open Lab… another lab, Cancel: the first lab stays open.
    DialogDriver open("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, other.path()); });
    DialogDriver cancelSwitch("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "Cancel", "gpu-1"); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Open Lab…"));
    QVERIFY2(open.wait(), qPrintable(open.error()));
    QVERIFY2(cancelSwitch.wait(), qPrintable(cancelSwitch.error()));
    QCOMPARE(session->path(), lab.path());
    QCOMPARE(asked.last(), Reason::SwitchLab);
    QCOMPARE(closing.count(), 0);

    // Lab → Quit, Quit Anyway, the check says no: still open.
    DialogDriver refused("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "Quit Anyway", "gpu-1"); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(refused.wait(), qPrintable(refused.error()));
    QVERIFY(waitUntil([&] { return checked.size() == 1; }, "the close check to run"));
    QTest::qWait(200);
    QVERIFY(window->isVisible());
    QCOMPARE(checked.front(), Reason::Quit);
    QCOMPARE(closing.count(), 0);

    // Lab → Quit, Quit Anyway, the check agrees: the guards' owners hear it, the window closes.
    DialogDriver quit("QMessageBox", [](QWidget* d) { return answerMessageBox(d, "Quit Anyway", "gpu-1"); });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(quit.wait(), qPrintable(quit.error()));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    QCOMPARE(closing.count(), 1);
    QCOMPARE(closing.front().front().value<Reason>(), Reason::Quit);

    // A guard lives as long as its owner.
    QCOMPARE(session->closeConcerns(Reason::Quit).size(), 1);
    owner.reset();
    QVERIFY(session->closeConcerns(Reason::Quit).isEmpty());
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }

  void sigtermQuitsTheRealWindowCleanly() {
    DemoLab lab;
    QVERIFY(lab.ok());
    QTemporaryDir home;
    QProcess gui;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("CROSSLAB_HOME", home.path());
    env.insert("XDG_CONFIG_HOME", home.filePath("config"));
    gui.setProcessEnvironment(env);
    gui.start(guiPath(), {lab.path()});
    QVERIFY(gui.waitForStarted(kWaitMs));
    QByteArray err;
    QVERIFY(waitUntil(
        [&] {
          err += gui.readAllStandardError();
          return err.contains("opened lab 'demo'") || gui.state() == QProcess::NotRunning;
        },
        "crosslab to open the lab"));
    QVERIFY2(gui.state() == QProcess::Running, err.constData());
    ::kill(static_cast<pid_t>(gui.processId()), SIGTERM);
    QVERIFY(gui.waitForFinished(kWaitMs));
    err += gui.readAllStandardError();
    QCOMPARE(gui.exitStatus(), QProcess::NormalExit);  // the event loop ended; no death by signal
    QCOMPARE(gui.exitCode(), 0);
    QVERIFY2(err.contains("signal 15: quitting"), err.constData());
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyQuitWithWorkStillGoing)
#include "test_journey_quit_with_work_still_going.moc"
