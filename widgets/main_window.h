#pragma once
// The workbench window: a sidebar of the five panels (Ctrl+1…5), the lab menus
// (new / open / recent), a status bar naming the open lab, and a log dock.

#include <QMainWindow>
#include <QVector>

class QListWidget;
class QStackedWidget;
class QMenu;
class QLabel;
class QDockWidget;
class QActionGroup;
class QVBoxLayout;

#include "backends/lab_session.h"

namespace crosslab::widgets {

class LogPanel;
class Theme;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum Panel { Venues = 0, Training, Benchmarks, Review, Ledger, PanelCount };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens the lab at `dir`. On failure shows an error dialog (non-blocking) and keeps
  // the lab that was open. Returns whether the lab was opened.
  bool openLab(const QString& dir);
  bool createLab(const QString& dir, const QString& name);
  // First start: build the demo lab with `crosslab-cli demo`, its stages as determinate
  // progress above the panels; the lab opens as soon as it exists and the Training panel
  // follows the demo's LoRA run while it trains. A failed or cancelled demo still opens
  // whatever it made, and says why.
  void buildDemoLab(const QString& dir, bool quick = false);

  // Asks the session's close guards whether the open lab may be closed now; with concerns,
  // a question names them all (Cancel keeps everything as it is). True: go ahead.
  bool requestLabClose(backends::LabSession::CloseReason reason);
  // SIGTERM/SIGINT: close the window and quit the event loop cleanly, asking nothing.
  void quitFromSignal();

  void showPanel(Panel panel);
  Panel currentPanel() const;
  QString panelTitle(Panel panel) const;

  backends::LabSession* session() const { return session_; }
  QMenu* recentMenu() const { return recentMenu_; }
  LogPanel* logPanel() const { return log_; }

 protected:
  void closeEvent(QCloseEvent* event) override;

 private slots:
  void onNewLab();
  void onOpenLab();
  void onAbout();
  void rebuildRecentMenu();
  void updateLabStatus();
  void onLabFilesLost(const QString& reason);

 private:
  void buildPanels();
  void buildMenus();
  void showError(const QString& title, const QString& text);
  void restoreSettings();

  backends::LabSession* session_;
  Theme* theme_;
  QListWidget* sidebar_;
  QStackedWidget* stack_;
  QVBoxLayout* rightColumn_;  // [first start's progress] + the panels
  QMenu* recentMenu_ = nullptr;
  QLabel* labLabel_;
  QDockWidget* logDock_;
  LogPanel* log_;
  QVector<QString> titles_;
  bool quittingBySignal_ = false;
};

}  // namespace crosslab::widgets
