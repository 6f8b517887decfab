#include "journey_support.h"

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QApplication>
#include <QDateTime>
#include <QDialog>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QTimer>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include "core/store/posix_locks.h"

namespace crosslab::journey {
namespace {

QString plain(QString text) {
  text.remove('&');
  const int tab = text.indexOf('\t');
  return (tab >= 0 ? text.left(tab) : text).trimmed();
}

void logFailure(const QString& what) { qWarning("journey: %s", qPrintable(what)); }

// Python's sqlite3, a process of its own: what any other program would read from the lab.
// Read-only (mode=ro), so that closing it never checkpoints or removes anything.
constexpr const char* kQueryPy = R"PY(
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=60)
for row in db.execute(sys.argv[2]):
    print("" if row[0] is None else str(row[0]).replace("\n", " "))
db.close()
)PY";

// Copies the fixture lab and rewrites the absolute paths it holds (in lab.sqlite and in the
// JSON files of its runs) from the fixture's folder to the copy's.
constexpr const char* kCopyPy = R"PY(
import os, shutil, sqlite3, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst, dirs_exist_ok=True)
db = sqlite3.connect(os.path.join(dst, "lab.sqlite"))
for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
    for col in [r[1] for r in db.execute("PRAGMA table_info(%s)" % table)]:
        db.execute("UPDATE %s SET %s = replace(%s, ?, ?) WHERE typeof(%s) = 'text' AND instr(%s, ?) > 0"
                   % (table, col, col, col, col), (src, dst, src))
db.commit()
db.close()
for root, _, files in os.walk(dst):
    for f in files:
        if f.endswith((".json", ".jsonl")):
            p = os.path.join(root, f)
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
            if src in text:
                with open(p + ".tmp", "w", encoding="utf-8") as fh:
                    fh.write(text.replace(src, dst))
                os.replace(p + ".tmp", p)
)PY";

bool runPython(const char* script, const QStringList& args, QString* out, QString* error) {
  QProcess p;
  p.start(JOURNEY_PYTHON3, QStringList{"-c", script} + args);
  if (!p.waitForFinished(kWaitMs) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    if (error) *error = "python3: " + QString::fromUtf8(p.readAllStandardError()).trimmed() + p.errorString();
    return false;
  }
  if (out) *out = QString::fromUtf8(p.readAllStandardOutput());
  return true;
}

QList<QWidget*> candidates(QObject* root) {
  QList<QWidget*> out;
  if (root) {
    if (auto* w = qobject_cast<QWidget*>(root)) out << w;
    out += root->findChildren<QWidget*>();
    return out;
  }
  for (QWidget* top : QApplication::topLevelWidgets()) {
    out << top;
    out += top->findChildren<QWidget*>();
  }
  return out;
}

}  // namespace

void initJourneyProgram() {
  static QTemporaryDir settings;
  QSettings::setDefaultFormat(QSettings::IniFormat);
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings.filePath("settings"));
  QCoreApplication::setOrganizationName("crosslab-journey");
  QCoreApplication::setApplicationName("crosslab-journey");
  qputenv("CROSSLAB_CLI", testing::cliPath().toLocal8Bit());
}

QString guiPath() { return QStringLiteral(JOURNEY_GUI); }

// ---- DemoLab ------------------------------------------------------------------------------

DemoLab::DemoLab() {
  const QString fixture = QStringLiteral(JOURNEY_DEMO_LAB);
  if (!QFileInfo::exists(fixture + "/lab.sqlite")) {
    logFailure("no demo lab at " + fixture + " (the journey_demo_lab CTest fixture builds it)");
    return;
  }
  QString error;
  ok_ = dir_.isValid() && runPython(kCopyPy, {fixture, dir_.path()}, nullptr, &error);
  if (!ok_) logFailure("copying the demo lab: " + error);
}

QString DemoLab::file(const QString& relative) const { return QDir(path()).filePath(relative); }

QString DemoLab::writeOutputs(const QString& fileName, const QString& model) const {
  QFile evalFile(file("data/demo_eval.jsonl"));
  if (!evalFile.open(QIODevice::ReadOnly)) return {};
  QByteArray out;
  int n = 0;
  for (const QByteArray& line : evalFile.readAll().split('\n')) {
    const auto q = QJsonDocument::fromJson(line).object();
    if (q.isEmpty()) continue;
    // Half the answers are the reference (exact quotes), half cite a sentence in no context.
    const QString answer = n++ % 2 ? QString(R"({"answer":"unknown","evidence":["A sentence that is in no context."]})")
                                   : q["reference"].toString();
    out += QJsonDocument(QJsonObject{{"id", q["id"]}, {"model", model}, {"output", answer}}).toJson(QJsonDocument::Compact) + '\n';
  }
  QFile f(file(fileName));
  if (n == 0 || !f.open(QIODevice::WriteOnly) || f.write(out) != out.size()) return {};
  return f.fileName();
}

// ---- finding and clicking -----------------------------------------------------------------

bool waitUntil(const std::function<bool()>& predicate, const QString& what, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!predicate()) {
    if (t.elapsed() > timeoutMs) {
      logFailure("timed out after " + QString::number(timeoutMs) + " ms waiting for " + what);
      return false;
    }
    QTest::qWait(20);
  }
  return true;
}

QWidget* waitForWidget(QObject* root, const QString& name, const char* className, int timeoutMs) {
  QPointer<QObject> guard(root);
  QWidget* found = nullptr;
  waitUntil(
      [&] {
        if (root && !guard) return true;
        for (QWidget* w : candidates(root))
          if (w->objectName() == name && w->inherits(className) && w->isVisible()) {
            found = w;
            return true;
          }
        return false;
      },
      QString("a visible %1 named '%2'").arg(className, name), timeoutMs);
  return found;
}

QAbstractButton* findButton(QObject* root, const QString& nameOrText, int timeoutMs) {
  QAbstractButton* found = nullptr;
  waitUntil(
      [&] {
        for (QWidget* w : candidates(root))
          if (auto* b = qobject_cast<QAbstractButton*>(w);
              b && b->isVisible() && b->isEnabled() && (b->objectName() == nameOrText || plain(b->text()) == nameOrText)) {
            found = b;
            return true;
          }
        return false;
      },
      "a visible, enabled button '" + nameOrText + "'", timeoutMs);
  return found;
}

bool click(QWidget* widget) {
  if (!widget) return false;
  QPointer<QWidget> w(widget);
  if (!waitUntil([&] { return !w || (w->isVisible() && w->isEnabled()); }, "'" + widget->objectName() + "' to be clickable") || !w)
    return false;
  QTest::mouseClick(w, Qt::LeftButton, Qt::NoModifier, w->rect().center());
  return true;
}

bool clickButton(QObject* root, const QString& nameOrText, int timeoutMs) {
  return click(findButton(root, nameOrText, timeoutMs));
}

bool showAt(QMainWindow* window, int width, int height) {
  window->resize(width, height);
  window->show();
  return QTest::qWaitForWindowExposed(window);
}

bool openLabFromMenu(QMainWindow* window, const QString& labDir) {
  DialogDriver open("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, labDir); });
  if (!chooseMenu(window, "Lab", "Open Lab…")) return false;
  if (open.wait()) return true;
  logFailure(open.error());
  return false;
}

bool newLabFromMenu(QMainWindow* window, const QString& labDir) {
  DialogDriver folder("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, labDir); });
  DialogDriver name("QInputDialog", [&](QWidget* d) { return clickButton(d, "OK"); });
  if (!chooseMenu(window, "Lab", "New Lab…")) return false;
  for (DialogDriver* d : {&folder, &name})
    if (!d->wait()) {
      logFailure(d->error());
      return false;
    }
  return true;
}

bool showPanel(QMainWindow* window, const QString& title) {
  auto* sidebar = window->findChild<QListWidget*>("sidebar");
  if (!sidebar) return false;
  for (int i = 0; i < sidebar->count(); ++i) {
    QListWidgetItem* item = sidebar->item(i);
    if (item->text() != title) continue;
    sidebar->scrollToItem(item);
    QTest::mouseClick(sidebar->viewport(), Qt::LeftButton, Qt::NoModifier, sidebar->visualItemRect(item).center());
    return waitUntil([&] { return sidebar->currentItem() == item; }, "the sidebar to show " + title);
  }
  logFailure("no sidebar row " + title);
  return false;
}

bool chooseMenu(QMainWindow* window, const QString& menuTitle, const QString& itemText) {
  QMenuBar* bar = window->menuBar();
  QAction* menuAction = nullptr;
  for (QAction* a : bar->actions())
    if (plain(a->text()) == menuTitle) menuAction = a;
  if (!menuAction || !menuAction->menu()) {
    logFailure("no menu " + menuTitle);
    return false;
  }
  QMenu* menu = menuAction->menu();
  QTest::mouseClick(bar, Qt::LeftButton, Qt::NoModifier, bar->actionGeometry(menuAction).center());
  if (!waitUntil([&] { return menu->isVisible(); }, "menu " + menuTitle + " to open")) return false;
  for (QAction* a : menu->actions())
    if (!a->isSeparator() && plain(a->text()) == itemText) {
      if (!a->isEnabled()) {
        logFailure(menuTitle + " → " + itemText + " is disabled");
        menu->hide();
        return false;
      }
      QTest::mouseClick(menu, Qt::LeftButton, Qt::NoModifier, menu->actionGeometry(a).center());
      return true;
    }
  logFailure("no item " + itemText + " in menu " + menuTitle);
  menu->hide();
  return false;
}

int rowWith(const QAbstractItemModel* model, const QStringList& cells) {
  if (!model) return -1;
  for (int r = 0; r < model->rowCount(); ++r) {
    int found = 0;
    for (const QString& want : cells)
      for (int c = 0; c < model->columnCount(); ++c)
        if (model->index(r, c).data().toString() == want) {
          ++found;
          break;
        }
    if (found == cells.size()) return r;
  }
  return -1;
}

bool typeInto(QLineEdit* edit, const QString& text) {
  if (!edit || !click(edit)) return false;
  QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
  if (edit->text() != text) {
    logFailure("typed '" + text + "' but the field reads '" + edit->text() + "'");
    return false;
  }
  return true;
}

bool chooseInCombo(QComboBox* combo, const QString& text) {
  if (!combo) return false;
  const int target = combo->findText(text);
  if (target < 0) {
    logFailure("no item '" + text + "' in combo box '" + combo->objectName() + "'");
    return false;
  }
  combo->setFocus();
  for (int guard = 0; combo->currentIndex() != target && guard < combo->count() + 2; ++guard)
    QTest::keyClick(combo, combo->currentIndex() < target ? Qt::Key_Down : Qt::Key_Up);
  if (combo->currentIndex() != target) {
    logFailure("could not reach '" + text + "' in combo box '" + combo->objectName() + "'");
    return false;
  }
  return true;
}

// ---- modal dialogs ------------------------------------------------------------------------

DialogDriver::DialogDriver(const char* className, std::function<bool(QWidget*)> drive, int timeoutMs)
    : className_(className), drive_(std::move(drive)), timer_(new QTimer(this)),
      deadline_(QDateTime::currentMSecsSinceEpoch() + timeoutMs) {
  timer_->setInterval(50);
  connect(timer_, &QTimer::timeout, this, &DialogDriver::poll);
  timer_->start();
}

DialogDriver::~DialogDriver() = default;

void DialogDriver::poll() {
  if (running_ || done_) return;
  for (QWidget* w : QApplication::topLevelWidgets()) {
    if (!w->isVisible() || !w->inherits(className_.constData())) continue;
    running_ = true;
    timer_->stop();
    QPointer<QWidget> dialog(w);
    ok_ = drive_(w);
    if (!ok_) {
      error_ = "driving the " + QString::fromLatin1(className_) + " failed";
      if (auto* d = qobject_cast<QDialog*>(dialog.data()); d && d->isVisible()) d->reject();
    }
    running_ = false;
    done_ = true;
    return;
  }
  if (QDateTime::currentMSecsSinceEpoch() > deadline_) {
    error_ = "no " + QString::fromLatin1(className_) + " appeared";
    done_ = true;
    timer_->stop();
  }
}

bool DialogDriver::wait() {
  waitUntil([this] { return done_; }, QString::fromLatin1(className_) + " to be driven", int(qMax<qint64>(0, deadline_ - QDateTime::currentMSecsSinceEpoch()) + 5000));
  if (!error_.isEmpty()) logFailure(error_);
  return done_ && ok_;
}

namespace {
bool clickAccept(QFileDialog* dialog) {
  auto* buttons = dialog->findChild<QDialogButtonBox*>("buttonBox");
  QAbstractButton* accept = nullptr;
  for (auto* b : buttons ? buttons->buttons() : QList<QAbstractButton*>{})
    if (buttons->buttonRole(b) == QDialogButtonBox::AcceptRole) accept = b;
  if (!click(accept)) return false;
  return waitUntil([&] { return !dialog->isVisible(); }, "the file dialog to close");
}
}  // namespace

bool typePathInFileDialog(QWidget* widget, const QString& path) {
  auto* dialog = qobject_cast<QFileDialog*>(widget);
  if (!dialog || !QTest::qWaitForWindowExposed(dialog)) return false;
  return typeInto(dialog->findChild<QLineEdit*>("fileNameEdit"), path) && clickAccept(dialog);
}

bool chooseInFileDialog(QWidget* widget, const QString& fileName) {
  auto* dialog = qobject_cast<QFileDialog*>(widget);
  if (!dialog) return false;
  if (!QTest::qWaitForWindowExposed(dialog)) return false;
  // The entry as the dialog lists it, in whichever view (list or detail) is showing.
  QAbstractItemView* view = nullptr;
  QModelIndex entry;
  const bool listed = waitUntil(
      [&] {
        for (auto* v : dialog->findChildren<QAbstractItemView*>()) {
          if (!v->isVisible() || !v->model()) continue;
          const auto hits = v->model()->match(v->model()->index(0, 0, v->rootIndex()), Qt::DisplayRole, fileName, 1,
                                              Qt::MatchExactly);
          if (!hits.isEmpty()) {
            view = v;
            entry = hits.front();
            return true;
          }
        }
        return false;
      },
      "the file dialog to list " + fileName);
  if (!listed) return false;
  view->scrollTo(entry);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, view->visualRect(entry).center());
  auto* nameEdit = dialog->findChild<QLineEdit*>("fileNameEdit");
  if (!waitUntil([&] { return !nameEdit || nameEdit->text() == fileName; }, "the file name field to read " + fileName))
    return false;
  return clickAccept(dialog);
}

bool answerMessageBox(QWidget* widget, const QString& buttonText, const QString& expectText) {
  auto* box = qobject_cast<QMessageBox*>(widget);
  if (!box) return false;
  if (!expectText.isEmpty() && !box->text().contains(expectText) && !box->informativeText().contains(expectText)) {
    logFailure("the message box reads '" + box->text() + "', not '" + expectText + "'");
    return false;
  }
  for (QAbstractButton* b : box->buttons())
    if (plain(b->text()) == buttonText) return click(b);
  logFailure("the message box has no button " + buttonText);
  return false;
}

// ---- the lab, seen from outside -----------------------------------------------------------

QStringList labQuery(const QString& labDir, const QString& sql, QString* error) {
  QString out;
  if (!runPython(kQueryPy, {QDir(labDir).filePath("lab.sqlite"), sql}, &out, error)) return {};
  QStringList rows = out.split('\n');
  if (!rows.isEmpty() && rows.back().isEmpty()) rows.removeLast();
  return rows;
}

QString integrityCheck(const QString& labDir) {
  QString error;
  const QStringList rows = labQuery(labDir, "PRAGMA integrity_check", &error);
  return rows.isEmpty() ? error : rows.join("; ");
}

qint64 rowCount(const QString& labDir, const QString& table, const QString& where) {
  QString error;
  const QStringList rows =
      labQuery(labDir, "SELECT count(*) FROM " + table + (where.isEmpty() ? QString() : " WHERE " + where), &error);
  if (rows.size() != 1) {
    logFailure("counting " + table + ": " + error);
    return -1;
  }
  return rows.front().toLongLong();
}

QStringList staleLabDescriptors(const QString& labDir) {
  const QString db = QDir(QFileInfo(labDir).canonicalFilePath()).filePath("lab.sqlite");
  QStringList out;
  const QDir fds("/proc/self/fd");
  for (const QString& fd : fds.entryList(QDir::NoDotAndDotDot | QDir::System | QDir::Files | QDir::Dirs)) {
    char buf[4096];
    const ssize_t n = ::readlink(fds.filePath(fd).toLocal8Bit().constData(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    const QString target = QString::fromLocal8Bit(buf, int(n));
    if (!target.startsWith(db)) continue;
    struct stat open {}, onDisk {};
    const bool deleted = target.endsWith(" (deleted)");
    const QString path = deleted ? target.chopped(10) : target;
    const bool replaced = !deleted && ::fstat(fd.toInt(), &open) == 0 &&
                          (::stat(path.toLocal8Bit().constData(), &onDisk) != 0 || open.st_ino != onDisk.st_ino);
    if (deleted || replaced) out << QString("fd %1 -> %2%3").arg(fd, target, replaced ? " (replaced)" : "");
  }
  return out;
}

QString labLocksLost(const QString& labDir) {
  QStringList lost;
  for (const QString name : {"lab.sqlite", "lab.sqlite-shm"})
    if (const auto locks = store::heldLocks(QDir(labDir).filePath(name).toStdString()); !locks || locks->empty())
      lost << name;
  return lost.isEmpty() ? QString() : "this process holds no lock on " + lost.join(" and ");
}

// ---- child processes ----------------------------------------------------------------------

testing::CliResult runCliBesideWindow(const QStringList& args, int timeoutMs) {
  QProcess p;
  QEventLoop loop;  // the window keeps running (timers, repaints) while the child works
  QObject::connect(&p, &QProcess::finished, &loop, &QEventLoop::quit);
  QObject::connect(&p, &QProcess::errorOccurred, &loop, &QEventLoop::quit);
  QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
  testing::startCli(p, args);
  if (p.waitForStarted(kWaitMs) && p.state() != QProcess::NotRunning) loop.exec();
  testing::CliResult r{-1, {}, {}};
  if (p.state() != QProcess::NotRunning) {
    p.kill();
    p.waitForFinished(kWaitMs);
  } else {
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  }
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  if (r.code != 0)
    logFailure("crosslab-cli " + args.join(' ') + " ended with " + QString::number(r.code) + ": " +
               QString::fromUtf8(r.err.right(2000)));
  return r;
}

}  // namespace crosslab::journey
