// The workbench shell, offscreen: opening labs, panel shortcuts, recent labs across
// restarts, the error path that keeps the previous lab, the log panel, themes.
#include <QAction>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <spdlog/spdlog.h>

#include <sstream>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/ledger/life_jsonl.h"
#include "widgets/empty_state_panel.h"
#include "widgets/ledger_panel.h"
#include "widgets/venues_panel.h"
#include "widgets/log_panel.h"
#include "widgets/main_window.h"
#include "widgets/recent_labs.h"
#include "widgets/review_panel.h"
#include "widgets/theme.h"

using crosslab::widgets::MainWindow;
using crosslab::widgets::RecentLabs;

class TestMainWindow : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString labA_, labB_;

  QStringList recentMenuEntries(MainWindow& w) {
    QStringList out;
    for (auto* a : w.recentMenu()->actions())
      if (!a->data().toString().isEmpty()) out << a->data().toString();
    return out;
  }
  QString statusText(MainWindow& w) { return w.findChild<QLabel*>("labStatus")->text(); }

 private slots:
  void initTestCase() {
    // QSettings go to a temporary folder, never the user's configuration.
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp_.filePath("settings"));
    QCoreApplication::setOrganizationName("crosslab-test");
    QCoreApplication::setApplicationName("crosslab-test");
    labA_ = tmp_.filePath("labA");
    labB_ = tmp_.filePath("labB");
    crosslab::store::LabStore::create(labA_.toStdString(), "Lab A");
    crosslab::store::LabStore::create(labB_.toStdString(), "Lab B");
  }

  void init() { QSettings().clear(); }

  void opensLabAndShowsItInStatusBar() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openLab(labA_));
    QVERIFY(statusText(w).contains("Lab A"));
    QVERIFY(statusText(w).contains(QDir(labA_).absolutePath()));
    QVERIFY(w.windowTitle().contains("Lab A"));
  }

  void ctrlDigitsSwitchPanels() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* stack = w.findChild<QStackedWidget*>("panels");
    const QStringList expected = {"Venues", "Training", "Benchmarks", "Review", "Ledger"};
    for (int i = 4; i >= 0; --i) {
      QTest::keyClick(&w, static_cast<Qt::Key>(Qt::Key_1 + i), Qt::ControlModifier);
      QCOMPARE(static_cast<int>(w.currentPanel()), i);
      QCOMPARE(stack->currentIndex(), i);
      if (i == MainWindow::Venues) {  // the Venues capability has its real panel
        QVERIFY(qobject_cast<crosslab::widgets::VenuesPanel*>(stack->currentWidget()));
        continue;
      }
      if (i == MainWindow::Review) {  // the real Review panel replaced its placeholder
        QVERIFY(qobject_cast<crosslab::widgets::ReviewPanel*>(stack->currentWidget()));
        continue;
      }
      QCOMPARE(stack->currentWidget()->objectName(), "panel_" + expected[i].toLower());
    }
  }

  void panelsSayWhatTheLabHolds() {
    MainWindow w;
    QVERIFY(w.openLab(labA_));
    auto* stack = w.findChild<QStackedWidget*>("panels");
    auto* ledger = qobject_cast<crosslab::widgets::LedgerPanel*>(stack->widget(MainWindow::Ledger));
    QVERIFY(ledger);
    auto* lives = ledger->findChild<QTableView*>("livesTable");
    QCOMPARE(lives->model()->rowCount(), 1);  // the totals row only
    std::istringstream in(
        R"({"box": "BOX-1", "provider": "hotaisle", "gpu": "MI300X", "gpus": 1, "price_per_hour": 6.0, "min_minutes": 1, )"
        R"("provisioned_at": "2026-01-04T10:00:00Z", "deleted_at": "2026-01-04T10:30:00Z", "work": [], "transfers": []})");
    crosslab::ledger::importLives(*w.session()->store(), crosslab::ledger::parseLivesJsonl(in));
    ledger->reload();
    QCOMPARE(lives->model()->rowCount(), 2);
    QCOMPARE(lives->model()->index(0, 4).data().toString(), QString("$3.00"));
    QVERIFY(ledger->findChild<QLabel*>("ledgerTotals")->text().contains("GPU rental $3.00"));
  }

  void recentLabsPersistAcrossRestarts() {
    {
      MainWindow w;
      QVERIFY(w.openLab(labA_));
      QVERIFY(w.openLab(labB_));
      QCOMPARE(recentMenuEntries(w), (QStringList{QDir(labB_).absolutePath(), QDir(labA_).absolutePath()}));
      w.close();
    }
    MainWindow again;  // a new window reads the same QSettings
    QCOMPARE(recentMenuEntries(again), (QStringList{QDir(labB_).absolutePath(), QDir(labA_).absolutePath()}));
    QCOMPARE(RecentLabs::lastLab(), QDir(labB_).absolutePath());
    // Choosing an entry opens that lab.
    for (auto* a : again.recentMenu()->actions()) {
      if (a->data().toString() == QDir(labA_).absolutePath()) {
        a->trigger();
        break;
      }
    }
    QVERIFY(statusText(again).contains("Lab A"));
    QCOMPARE(RecentLabs::lastLab(), QDir(labA_).absolutePath());
  }

  void nonLabFolderShowsErrorAndKeepsPreviousLab() {
    MainWindow w;
    w.show();
    QVERIFY(w.openLab(labA_));
    const QString plain = tmp_.filePath("not-a-lab");
    QDir().mkpath(plain);
    QVERIFY(!w.openLab(plain));
    auto* box = w.findChild<QMessageBox*>("errorDialog");
    QVERIFY(box);
    QTRY_VERIFY(box->isVisible());
    QVERIFY(box->text().contains("no lab.sqlite"));
    QCOMPARE(w.session()->path(), QDir(labA_).absolutePath());
    QVERIFY(statusText(w).contains("Lab A"));
    QVERIFY(!recentMenuEntries(w).contains(plain));
    box->accept();
  }

  void geometryAndPanelRestoredAtStart() {
    {
      MainWindow w;
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.resize(1000, 720);  // above the window's floor (Review keeps its instruments' rows whole: ~684 px)
      w.showPanel(MainWindow::Review);
      w.close();
    }
    MainWindow again;
    QCOMPARE(again.size(), QSize(1000, 720));
    QCOMPARE(again.currentPanel(), MainWindow::Review);
  }

  void logPanelShowsSpdlogMessages() {
    MainWindow w;
    spdlog::warn("watchdog test line {}", 42);
    w.logPanel()->flushPending();
    QTRY_VERIFY(w.logPanel()->toPlainText().contains("watchdog test line 42"));
    // Messages from another thread arrive too.
    std::thread([] { spdlog::info("from a worker thread"); }).join();
    QTRY_VERIFY(w.logPanel()->toPlainText().contains("from a worker thread"));
  }

  void darkThemeAppliesAndPersists() {
    {
      MainWindow w;
      QAction* dark = nullptr;
      for (auto* a : w.findChildren<QAction*>())
        if (a->text() == "Dark") dark = a;
      QVERIFY(dark);
      dark->trigger();
      QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 128);
      QCOMPARE(QSettings().value("ui/theme").toString(), QString("dark"));
    }
    MainWindow again;  // reads the saved theme
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 128);
    QSettings().setValue("ui/theme", "light");
    MainWindow light;
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() >= 128);
  }

  void startupChoosesArgumentThenLastThenDemo() {
    qputenv("CROSSLAB_HOME", tmp_.filePath("home").toUtf8());
    using crosslab::backends::startupLab;
    QCOMPARE(startupLab({labB_}, labA_), labB_);
    QCOMPARE(startupLab({}, labA_), labA_);
    QCOMPARE(startupLab({}, tmp_.filePath("deleted-lab")), tmp_.filePath("home/demo"));
    QCOMPARE(startupLab({}, {}), tmp_.filePath("home/demo"));
    // First start: the demo lab is created and opened.
    MainWindow w;
    QVERIFY(w.createLab(crosslab::backends::demoLabPath(), "demo"));
    QVERIFY(crosslab::store::LabStore::isLab(tmp_.filePath("home/demo").toStdString()));
    QVERIFY(statusText(w).contains("demo"));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
