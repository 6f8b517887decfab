// A real window as a separate process for the SIGTERM journey (SIGTERM and SIGINT handled
// as app/gui_main.cpp handles them: the window closes through the event loop): opens LAB, goes to
// Benchmarks, picks "Local server", clicks Run (one short level) and, once the server is
// up, prints "server pid N" and keeps running until it is signalled. Also starts a local
// training run (New Run, this machine) when asked (--train) and prints "trainer pid N":
// trainers must outlive the window on purpose.
#include <QApplication>
#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTimer>
#include <QtTest>

#include <csignal>
#include <cstdio>

#include "backends/serve/local_serve_process.h"
#include "backends/unix_signals.h"
#include "core/train/run_process.h"
#include "tests/journeys/journey_support.h"
#include "widgets/benchmarks_panel.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  backends::UnixSignals unixSignals({SIGTERM, SIGINT});  // as app/gui_main.cpp
  if (argc < 2) return 2;
  const QString labPath = QString::fromLocal8Bit(argv[1]);
  const bool train = argc > 2 && QString(argv[2]) == "--train";
  initJourneyProgram();
  widgets::MainWindow window;
  window.show();
  if (!window.openLab(labPath)) return 3;
  QObject::connect(&unixSignals, &backends::UnixSignals::received, &window, [&window](int) {
    window.quitFromSignal();  // the real window's way: close through the event loop
    QApplication::quit();
  });
  QTimer::singleShot(0, &window, [&] {
    if (train) {
      DialogDriver newRun("crosslab::widgets::NewRunDialog", [](QWidget* d) {
        return typeInto(d->findChild<QLineEdit*>("runName"), "outlives-the-window") && clickButton(d, "startButton");
      });
      if (!showPanel(&window, "Training") || !clickButton(&window, "newRunButton") || !newRun.wait()) {
        std::fprintf(stderr, "cannot start the run: %s\n", qPrintable(newRun.error()));
        QApplication::exit(4);
        return;
      }
      const QString run = labPath + "/runs/outlives-the-window";
      waitUntil([&] { return train::readProcessRecord(run.toStdString()).has_value(); }, "the trainer's record", kTrainWaitMs);
      const auto record = train::readProcessRecord(run.toStdString());
      std::printf("trainer pid %lld\n", record ? record->pid : 0LL);
      std::fflush(stdout);
    }
    if (!showPanel(&window, "Benchmarks")) return QApplication::exit(5);
    auto* kind = waitFor<QComboBox>(&window, "endpointKind");
    kind->setFocus();
    QTest::keyClick(kind, Qt::Key_Down);  // Local server (crosslab-cli serve)
    typeInto(waitFor<QLineEdit>(&window, "levels"), "1");
    auto* outputLen = waitFor<QSpinBox>(&window, "outputLen");
    outputLen->setFocus();
    QTest::keyClick(outputLen, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(outputLen, "4");
    auto* panel = window.findChild<widgets::BenchmarksPanel*>();
    QObject::connect(panel->server(), &backends::LocalServeProcess::ready, &window, [panel] {
      std::printf("server pid %lld\n", static_cast<long long>(panel->server()->processId()));
      std::fflush(stdout);
    });
    if (!clickButton(&window, "runButton")) QApplication::exit(6);
  });
  return QApplication::exec();
}
