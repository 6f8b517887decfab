// crosslab: the Qt 6 GUI. Wiring only: pick the lab to open, show the window.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QScreen>
#include <QSettings>
#include <QTimer>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <build_info.h>

#include <csignal>

#include "backends/lab_locations.h"
#include "backends/unix_signals.h"
#include "core/store/lab_store.h"
#include "widgets/main_window.h"
#include "widgets/recent_labs.h"

using crosslab::widgets::MainWindow;


int main(int argc, char** argv) {
  QApplication app(argc, argv);
  crosslab::backends::UnixSignals unixSignals({SIGTERM, SIGINT});
  QApplication::setOrganizationName("crosslab");
  QApplication::setApplicationName("crosslab");
  QApplication::setApplicationVersion(CROSSLAB_VERSION);
  QApplication::setDesktopFileName("io.github.crosslab.Crosslab");

  auto logger = spdlog::stderr_color_mt("crosslab");
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);

  QCommandLineParser parser;
  parser.setApplicationDescription("crosslab — a workbench for portable fine-tuning labs");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("lab", "The lab folder to open.", "[LAB]");
  QCommandLineOption screenshot("screenshot", "Save a screenshot of the screen to FILE, then quit.", "FILE");
  QCommandLineOption panel("panel", "Show panel N (1-5) first.", "N");
  QCommandLineOption size("size", "Window size WxH, at the top-left corner (screenshots).", "WxH");
  parser.addOption(screenshot);
  parser.addOption(size);
  parser.addOption(panel);
  parser.process(app);

  MainWindow window;
  const QString lab =
      crosslab::backends::startupLab(parser.positionalArguments(), crosslab::widgets::RecentLabs::lastLab());
  const bool isDemo = QDir(lab).absolutePath() == QDir(crosslab::backends::demoLabPath()).absolutePath();
  if (isDemo && !crosslab::store::LabStore::isLab(lab.toStdString()))
    QTimer::singleShot(0, &window, [&window, lab] { window.buildDemoLab(lab, qEnvironmentVariableIsSet("CROSSLAB_DEMO_QUICK")); });
  else
    window.openLab(lab);
  if (parser.isSet(panel)) window.showPanel(static_cast<MainWindow::Panel>(parser.value(panel).toInt() - 1));
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split('x');
    if (wh.size() == 2) {
      window.move(0, 0);
      window.resize(wh[0].toInt(), wh[1].toInt());
    }
  }
  window.show();

  // SIGTERM (logout, kill) and SIGINT (Ctrl+C in a terminal): close the window and leave the
  // event loop, so that panels stop their children and the lab closes like on Lab → Quit.
  // (Caught from the start; handled once the event loop runs.)
  QObject::connect(&unixSignals, &crosslab::backends::UnixSignals::received, &window, [&window](int s) {
    spdlog::info("signal {}: quitting", s);
    window.quitFromSignal();
    QApplication::quit();
  });

  if (parser.isSet(screenshot)) {
    // Grab the whole X screen (a real framebuffer read under Xvfb), once the window has painted.
    const QString file = parser.value(screenshot);
    QTimer::singleShot(1500, &window, [&window, file] {
      const bool ok = window.screen()->grabWindow(0).save(file);
      spdlog::info("screenshot {} {}", file.toStdString(), ok ? "saved" : "FAILED");
      QApplication::exit(ok ? 0 : 1);
    });
  }
  return QApplication::exec();
}
