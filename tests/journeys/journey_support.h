#pragma once
// Shared support of the journey tests (tests/journeys/test_journey_<what_the_user_does>.cpp):
// the real window driven by mouse and keyboard on a copy of a real demo lab, with real
// `crosslab-cli` child processes, checked by what the user sees and by what the lab holds
// afterwards, read by an independent process.
//
// - DemoLab: a private copy of the demo lab that the `journey_demo_lab` CTest fixture builds
//   once per ctest run with `crosslab-cli demo --quick` (absolute paths inside relocated).
// - Finding widgets by objectName, clicking buttons, sidebar rows and menu items with real
//   mouse events, typing into line edits.
// - Modal dialogs (QMessageBox, QFileDialog, our own QDialogs) run their own event loop
//   inside the click that opens them: arm a DialogDriver first, then click; it drives the
//   dialog by its widgets from inside that loop.
// - The lab as another process sees it: PRAGMA integrity_check and row counts through
//   Python's sqlite3 (not this process's SQLite, which shares lock state with the window).
// - This process's open descriptors of the lab's database files (deleted ones are a bug).
//
// Failures inside helpers are reported with QTest::qFail-style messages and make the helper
// return false/nullptr; the test then ends with QVERIFY on that result.

#include <QMainWindow>
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QVariantList>
#include <QWidget>
#include <functional>
#include <memory>

#include "tests/support/cli_runner.h"

class QAbstractButton;
class QComboBox;
class QAbstractItemModel;
class QFileDialog;
class QLineEdit;
class QListWidget;
class QMessageBox;
class QTimer;

namespace crosslab::journey {

// Generous limits: the suite runs on a loaded 2-core machine.
constexpr int kWaitMs = 120000;
constexpr int kTrainWaitMs = 600000;

// Once per test program: QSettings into a temporary folder (never the user's), the GUI finds
// the built crosslab-cli (CROSSLAB_CLI), and QTest's fail-on-warning stays off.
void initJourneyProgram();

// A private copy of the demo lab built by the CTest fixture, relocated: the absolute paths
// the demo wrote (run folders, the eval set last reviewed, model paths) name the copy.
class DemoLab {
 public:
  DemoLab();
  bool ok() const { return ok_; }
  QString path() const { return dir_.path(); }
  QString file(const QString& relative) const;
  // An outputs file {id, model, output} for every question of the demo eval set, written
  // into the lab folder (where Review → Import Outputs… opens); returns its path.
  QString writeOutputs(const QString& fileName, const QString& model) const;

 private:
  QTemporaryDir dir_;
  bool ok_ = false;
};

// ---- finding and clicking -------------------------------------------------------------

// A visible widget of type T named `name` under `root` (or any top-level when root is null),
// waiting up to `timeoutMs` for it to appear. Null (with a logged reason) on timeout.
QWidget* waitForWidget(QObject* root, const QString& name, const char* className, int timeoutMs = kWaitMs);
template <typename T>
T* waitFor(QObject* root, const QString& name, int timeoutMs = kWaitMs) {
  return qobject_cast<T*>(waitForWidget(root, name, T::staticMetaObject.className(), timeoutMs));
}
// The visible, enabled button under `root` whose objectName or text (without '&') is `nameOrText`.
QAbstractButton* findButton(QObject* root, const QString& nameOrText, int timeoutMs = kWaitMs);
// A real left click in the middle of the widget (waits until it is visible and enabled).
bool click(QWidget* widget);
bool clickButton(QObject* root, const QString& nameOrText, int timeoutMs = kWaitMs);
// Clicks the sidebar row titled `title` ("Review", "Training", …) of the main window.
bool showPanel(QMainWindow* window, const QString& title);
// Shows `window` at width x height and waits until it is on screen.
bool showAt(QMainWindow* window, int width, int height);
// Lab → Open Lab…, the lab's folder typed into the file dialog, as a user opens a lab.
bool openLabFromMenu(QMainWindow* window, const QString& labDir);
// Lab → New Lab…: the folder typed into the file dialog, the name dialog's default taken.
bool newLabFromMenu(QMainWindow* window, const QString& labDir);
// Opens menu `menu` of the window's menu bar with a click and clicks its item `item`
// (texts without '&' and without the shortcut). A modal dialog the item opens needs a
// DialogDriver armed before.
bool chooseMenu(QMainWindow* window, const QString& menu, const QString& item);
// Replaces the text of a line edit the way a user does: select all, type.
bool typeInto(QLineEdit* edit, const QString& text);
// Picks the item `text` of a closed combo box with the keyboard (focus, Up/Down), which
// is what a user tabbing through a form does; emits activated() like a click would.
bool chooseInCombo(QComboBox* combo, const QString& text);
// The first row of `model` that has every text of `cells` in some column (DisplayRole), or -1.
int rowWith(const QAbstractItemModel* model, const QStringList& cells);
// Waits until `predicate` holds, spinning the event loop; logs `what` on timeout.
bool waitUntil(const std::function<bool()>& predicate, const QString& what, int timeoutMs = kWaitMs);

// ---- modal dialogs ----------------------------------------------------------------------

// Arm before the click that opens a modal dialog: polls the top-level widgets from the event
// loop (so also from inside the dialog's exec()) for the next visible one of `className`
// (e.g. "QFileDialog", "QMessageBox", "crosslab::widgets::NewRunDialog") that it has not
// driven yet, and runs `drive` on it once. `drive` must close the dialog (accept/reject);
// if it returns false the dialog is rejected and the failure is kept.
class DialogDriver : public QObject {
  Q_OBJECT
 public:
  DialogDriver(const char* className, std::function<bool(QWidget*)> drive, int timeoutMs = kWaitMs);
  ~DialogDriver() override;
  // Waits until the dialog was driven (or the timeout passed); true when driving succeeded.
  bool wait();
  bool done() const { return done_; }
  QString error() const { return error_; }

 private:
  void poll();

  QByteArray className_;
  std::function<bool(QWidget*)> drive_;
  QTimer* timer_;
  qint64 deadline_;
  bool running_ = false, done_ = false, ok_ = false;
  QString error_;
};

// Drivers for common dialogs. A QFileDialog is driven by its own widgets: wait until its
// listing of the current folder shows `fileName`, click that entry, click Open/Choose.
bool chooseInFileDialog(QWidget* fileDialog, const QString& fileName);
// Types `path` (absolute) into the dialog's file name field and clicks Open/Choose/Save.
bool typePathInFileDialog(QWidget* fileDialog, const QString& path);
// Clicks the QMessageBox button whose text is `buttonText` (after checking the box's text
// contains `expectText`, when given).
bool answerMessageBox(QWidget* box, const QString& buttonText, const QString& expectText = {});

// ---- the lab, seen from outside -------------------------------------------------------

// Runs `sql` on LAB/lab.sqlite in a separate process (Python's sqlite3, read-only) and
// returns the first column of each row as text; sets *error on failure.
QStringList labQuery(const QString& labDir, const QString& sql, QString* error = nullptr);
// "ok" when the lab is sound; SQLite's messages (or the failure to read it) otherwise.
QString integrityCheck(const QString& labDir);
// Row count of `table` (with an optional WHERE clause), or -1 when it cannot be read.
qint64 rowCount(const QString& labDir, const QString& table, const QString& where = {});

// Descriptors of this process that point at a lab database file (lab.sqlite, -wal, -shm,
// -journal) which has been deleted or replaced on disk: "fd 12 -> /lab/lab.sqlite-wal (deleted)".
QStringList staleLabDescriptors(const QString& labDir);

// Empty while this process holds the POSIX locks an open SQLite connection keeps on
// lab.sqlite and its -shm; otherwise which are gone (something here opened and closed them).
QString labLocksLost(const QString& labDir);

// ---- child processes ------------------------------------------------------------------

// Runs `crosslab-cli ARGS` to its end, as a shell would next to the open window: started by
// the tests' one CLI runner (tests/support/cli_runner.h), while this process's event loop
// keeps running (the window repaints, polls and reacts). Code -1: timed out (killed), -2: crashed.
testing::CliResult runCliBesideWindow(const QStringList& args, int timeoutMs = kTrainWaitMs);
// The built `crosslab` GUI program, for journeys that start it as a process.
QString guiPath();

}  // namespace crosslab::journey
