#pragma once
// What the Venues journeys share: the window open on a copy of the demo lab, showing the
// Venues panel; its tabs chosen and its form filled the way a user does (clicks, typing,
// Return); rows of its tables selected with a click.

#include <QDir>
#include <QFileDialog>
#include <QProcess>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QLineEdit>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>
#include <memory>

#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"

namespace crosslab::journey {

inline std::unique_ptr<widgets::MainWindow> openVenues(const QString& labDir) {
  auto window = std::make_unique<widgets::MainWindow>();
  window->resize(1280, 800);
  window->show();
  if (!QTest::qWaitForWindowExposed(window.get()) || !window->openLab(labDir) || !showPanel(window.get(), "Venues"))
    return nullptr;
  return window;
}

// Clicks the tab titled `title` of the Venues panel.
inline bool showVenuesTab(QWidget* root, const QString& title) {
  auto* tabs = waitFor<QTabWidget>(root, "venuesTabs");
  if (!tabs) return false;
  for (int i = 0; i < tabs->count(); ++i)
    if (tabs->tabText(i).remove('&') == title) {
      QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(i).center());
      return waitUntil([&] { return tabs->currentIndex() == i; }, "the " + title + " tab");
    }
  return false;
}

// Types into a field of the panel and presses Return (the panel keeps it in the lab).
inline bool enterField(QWidget* root, const QString& name, const QString& text) {
  auto* edit = waitFor<QLineEdit>(root, name);
  if (!edit || !typeInto(edit, text)) return false;
  QTest::keyClick(edit, Qt::Key_Return);
  return true;
}

// The provider form pointed at a stand-in, by typing.
inline bool fillProviderForm(QWidget* root, const QString& url, const QString& team, const QString& keyVar) {
  return showVenuesTab(root, "Offers") && enterField(root, "apiUrlEdit", url) && enterField(root, "teamEdit", team) &&
         enterField(root, "apiKeyEnvEdit", keyVar);
}

// Selects `row` of a table with a click on its first cell.
inline bool clickRow(QTableView* view, int row) {
  if (!view || row < 0) return false;
  view->scrollTo(view->model()->index(row, 0));
  const QRect cell = view->visualRect(view->model()->index(row, 0));
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, cell.center());
  return view->selectionModel()->isRowSelected(row, {});
}

// A money or trust question: its default button is No (Enter must not say yes), then
// `answer` is clicked.
inline bool answerDefaultNo(QWidget* widget, const QString& answer, const QString& expectText) {
  auto* box = qobject_cast<QMessageBox*>(widget);
  if (!box || !box->defaultButton() || box->defaultButton()->text().remove('&') != "No") {
    qWarning("the question's default button is not No");
    if (box) box->reject();
    return false;
  }
  return answerMessageBox(widget, answer, expectText);
}

// A file dialog answered by typing a full path into its file name field and clicking its
// accept button (not Return: on a loaded machine the field's completer popup can appear late
// and take the key, leaving the dialog open).
inline bool typeFullPathInFileDialog(QWidget* dialog, const QString& path) {
  auto* fd = qobject_cast<QFileDialog*>(dialog);
  if (!fd || !typePathInFileDialog(fd, path)) return false;
  return waitUntil([&] { return !fd->isVisible(); }, "the file dialog to close") && fd->selectedFiles().value(0) == path;
}

// Our own dialogs: fill line edits by objectName, then click the button named `ok`.
inline bool fillDialog(QWidget* dialog, const QList<QPair<QString, QString>>& fields, const QString& ok) {
  for (const auto& [name, text] : fields) {
    auto* edit = dialog->findChild<QLineEdit*>(name);
    if (!edit || !typeInto(edit, text)) return false;
  }
  return clickButton(dialog, ok);
}

// Add box… filled in with a box reachable at the loopback sshd of the tests.
template <typename Sshd>
bool addLoopbackBox(QWidget* root, const Sshd& sshd, const QString& name) {
  DialogDriver add("crosslab::widgets::AddBoxDialog", [&](QWidget* d) {
    auto* port = d->findChild<QSpinBox*>("addBoxPort");
    if (!port) return false;
    port->setFocus();
    QTest::keyClick(port, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(port, QString::number(sshd.port()));
    if (port->value() != sshd.port()) return false;
    return fillDialog(
        d, {{"addBoxName", name}, {"addBoxHost", "127.0.0.1"}, {"addBoxUser", sshd.user()}, {"addBoxKey", sshd.userKey()}},
        "addBoxOk");
  });
  if (!clickButton(root, "addBoxButton")) return false;
  return add.wait();
}

inline QString venuesStatus(QWidget* root) {
  auto* status = root->findChild<QLabel*>("venuesStatus");
  return status ? status->text() : QString();
}

// The panel's header: what bills now and its cost so far (shown on every tab).
inline QString venuesHeader(QWidget* root) {
  auto* header = root->findChild<QLabel*>("totalCost");
  return header && header->isVisible() ? header->text() : QString();
}

// Another process writes to the lab (Python's sqlite3), as a shell beside the window would.
inline bool labWriteBesideWindow(const QString& labDir, const QString& sql) {
  static const char* script = R"PY(
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60)
db.execute(sys.argv[2])
db.commit()
db.close()
)PY";
  QProcess p;
  p.start(JOURNEY_PYTHON3, {"-c", script, QDir(labDir).filePath("lab.sqlite"), sql});
  if (p.waitForFinished(kWaitMs) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0) return true;
  qWarning("python3 writing the lab: %s", p.readAllStandardError().constData());
  return false;
}

}  // namespace crosslab::journey
