// The Ledger panel offscreen, driven through its widgets: per-life bars and ratios, the
// lives and totals table, transfers with rates, the friction log (Add… and Edit… through
// the real dialog, a refused entry that changes nothing), the one-click offer from a
// failed run pre-filled with its dead minutes and their cost, and Export report… writing
// into reports/ and handing the HTML to the desktop's browser.
#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialog>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>

#include <sstream>

#include "backends/lab_session.h"
#include "core/ledger/friction_log.h"
#include "core/ledger/life_jsonl.h"
#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "core/venues/meter.h"
#include "widgets/friction_dialog.h"
#include "widgets/ledger_panel.h"
#include "widgets/life_bars_chart.h"
#include "widgets/training_panel.h"
#include "widgets/venues_panel.h"
#include "widgets/boxes_model.h"
#include "core/venues/venue_store.h"

using namespace crosslab;

namespace {

// $6/h: $0.10 a minute. Life 1: staging 5, failed run 10 + wait 5 (debug), good run 10
// (compute), idle 5 → billed 35 min, $3.50, ratio 2:1. Life 2: a weights pull, live.
const char* kLives =
    R"({"box": "mi300x", "provider": "hotaisle", "gpu": "MI300X", "gpus": 1, "price_per_hour": 6.0, "min_minutes": 1,)"
    R"( "provisioned_at": "2026-01-04T10:00:00Z", "deleted_at": "2026-01-04T10:35:00Z",)"
    R"( "work": [{"kind": "train", "name": "8b", "start": "2026-01-04T10:05:00Z", "end": "2026-01-04T10:15:00Z", "status": "failed"},)"
    R"( {"kind": "train", "name": "8b", "start": "2026-01-04T10:20:00Z", "end": "2026-01-04T10:30:00Z", "status": "finished"}],)"
    R"( "transfers": [{"direction": "pull", "what": "weights", "bytes": 1000000000, "start": "2026-01-04T10:01:00Z", "end": "2026-01-04T10:03:00Z"}]})";

// Finds the modal dialog the panel opened, lets `fill` drive it; runs from the event loop.
template <typename F>
void whenDialogOpens(F fill) {
  QTimer::singleShot(0, [fill] {
    QTRY_VERIFY_WITH_TIMEOUT(qobject_cast<QDialog*>(QApplication::activeModalWidget()), 30000);
    fill(qobject_cast<QDialog*>(QApplication::activeModalWidget()));
  });
}

}  // namespace

class UrlCatcher : public QObject {
  Q_OBJECT
 public:
  QList<QUrl> urls;
 public slots:
  void open(const QUrl& url) { urls << url; }
};

class TestLedgerPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  backends::LabSession session_;
  std::int64_t failedRun_ = 0;

 private slots:
  void initTestCase() {
    QString err;
    QVERIFY2(session_.requestCreate(tmp_.filePath("lab"), "panel lab", &err), qPrintable(err));
    auto& lab = *session_.store();
    std::istringstream in(kLives);
    ledger::importLives(lab, ledger::parseLivesJsonl(in));
    // A live box with a failed run on it: the friction offer.
    std::istringstream live(
        R"({"box": "spark", "provider": "dgx", "gpu": "GB10", "gpus": 1, "price_per_hour": 3.0, "min_minutes": 0,)"
        R"( "provisioned_at": "2026-01-05T09:00:00Z", "deleted_at": null, "work": [], "transfers": []})");
    ledger::importLives(lab, ledger::parseLivesJsonl(live));
    store::NewRun nr;
    nr.name = "70b-dead";
    failedRun_ = lab.runs().requestCreate(nr);
    const auto box = lab.db().scalarInt("SELECT id FROM boxes WHERE name = 'spark'");
    ledger::LifeRecorder rec(lab);
    const auto w = rec.workStarted(box, ledger::WorkKind::Train, "70b-dead",
                                   *venues::parseUtc("2026-01-05T09:10:00Z"), {failedRun_, std::nullopt});
    rec.workEnded(w, ledger::WorkStatus::Stalled, *venues::parseUtc("2026-01-05T09:50:00Z"), "silent 40 min");
    lab.runs().requestStatus(failedRun_, crosslab::train::RunStatus::Running);
    lab.runs().requestStatus(failedRun_, crosslab::train::RunStatus::Stalled, "silent 40 min");
  }

  void showsLivesBarsTotalsAndTransfers() {
    widgets::LedgerPanel panel(&session_);
    panel.resize(1024, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* chart = panel.findChild<widgets::LifeBarsChart*>("lifeBars");
    QCOMPARE(chart->categories().size(), 2);
    QCOMPARE(chart->categories()[0], QString("01-04 mi300x #1 · 2:1"));
    QCOMPARE(chart->values("compute")[0], 1.0);
    QCOMPARE(chart->values("debug")[0], 1.5);
    QCOMPARE(chart->values("staging")[0], 0.5);
    QCOMPARE(chart->values("idle")[0], 0.5);
    auto* lives = panel.findChild<QTableView*>("livesTable");
    QCOMPARE(lives->model()->rowCount(), 3);  // two lives and the total
    QCOMPARE(lives->model()->index(0, 0).data().toString(), QString("mi300x #1"));
    QCOMPARE(lives->model()->index(0, 4).data().toString(), QString("$3.50"));
    QCOMPARE(lives->model()->index(0, 9).data().toString(), QString("2:1"));
    QVERIFY(lives->model()->index(1, 0).data().toString().contains("alive"));
    QVERIFY(panel.findChild<QLabel*>("ledgerTotals")->text().contains("compute $1.00"));
    auto* tabs = panel.findChild<QTabWidget*>("ledgerTabs");
    tabs->setCurrentIndex(1);
    auto* transfers = panel.findChild<QTableView*>("transfersTable");
    QCOMPARE(transfers->model()->index(0, 5).data().toString(), QString("8.3 MB/s"));
    QCOMPARE(transfers->model()->index(0, 3).data().toString(), QString("1.00 GB"));
  }

  void frictionAddEditAndTheOfferFromAFailedRun() {
    widgets::LedgerPanel panel(&session_);
    panel.resize(1024, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.findChild<QTabWidget*>("ledgerTabs")->setCurrentIndex(3);
    auto& lab = *session_.store();

    // A refused entry (no title) keeps the dialog open and writes nothing; then Cancel.
    bool refusedShown = false;
    whenDialogOpens([&](QDialog* d) {
      QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
      refusedShown = d->isVisible() && d->findChild<QLabel*>("frictionError")->isVisible();
      QTest::mouseClick(d->findChild<QPushButton*>("frictionCancel"), Qt::LeftButton);
    });
    QTest::mouseClick(panel.findChild<QPushButton*>("frictionAdd"), Qt::LeftButton);
    QVERIFY(refusedShown);
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM friction"), std::int64_t{0});

    whenDialogOpens([](QDialog* d) {
      QTest::keyClicks(d->findChild<QLineEdit*>("frictionTitle"), "stale apt index blocked python3-venv");
      auto* category = d->findChild<QComboBox*>("frictionCategory");
      category->setFocus();
      for (int i = 0; i < 10 && category->currentText() != "venue hygiene"; ++i) QTest::keyClick(category, Qt::Key_Up);
      QTest::keyClicks(d->findChild<QLineEdit*>("frictionFix"), "apt-get update");
      QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
    });
    QTest::mouseClick(panel.findChild<QPushButton*>("frictionAdd"), Qt::LeftButton);
    auto* table = panel.findChild<QTableView*>("frictionTable");
    QCOMPARE(table->model()->rowCount(), 1);
    QCOMPARE(table->model()->index(0, 2).data().toString(), QString("venue hygiene"));
    QCOMPARE(lab.db().scalarText("SELECT category || '|' || fix FROM friction"), std::string("venue_hygiene|apt-get update"));

    // Edit: mark it ecosystem-specific.
    table->selectRow(0);
    whenDialogOpens([](QDialog* d) {
      QCOMPARE(d->findChild<QLineEdit*>("frictionTitle")->text(), QString("stale apt index blocked python3-venv"));
      QTest::mouseClick(d->findChild<QCheckBox*>("frictionEcosystem"), Qt::LeftButton);
      QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
    });
    QTest::mouseClick(panel.findChild<QPushButton*>("frictionEdit"), Qt::LeftButton);
    QCOMPARE(table->model()->index(0, 7).data().toString(), QString("yes"));
    QCOMPARE(ledger::FrictionLog(lab).ecosystemSpecificCount(), std::int64_t{1});

    // The stalled run's offer, one click: 40 dead minutes at the box's $3/h = $2.00.
    auto* offers = panel.findChild<QListWidget*>("frictionOffers");
    QCOMPARE(offers->count(), 2);  // the stalled run and the first life's debug time
    QListWidgetItem* runOffer = nullptr;
    for (int i = 0; i < offers->count(); ++i)
      if (offers->item(i)->text().startsWith("run 70b-dead stalled")) runOffer = offers->item(i);
    QVERIFY(runOffer);
    offers->setCurrentItem(runOffer);
    double minutes = 0, usd = 0;
    QString cause;
    whenDialogOpens([&](QDialog* d) {
      minutes = d->findChild<QDoubleSpinBox*>("frictionMinutes")->value();
      usd = d->findChild<QDoubleSpinBox*>("frictionUsd")->value();
      cause = d->findChild<QPlainTextEdit*>("frictionCause")->toPlainText();
      QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
    });
    QTest::mouseClick(panel.findChild<QPushButton*>("frictionLogOffer"), Qt::LeftButton);
    QCOMPARE(minutes, 40.0);
    QCOMPARE(usd, 2.0);
    QCOMPARE(cause, QString("silent 40 min"));
    QCOMPARE(table->model()->rowCount(), 2);
    QCOMPARE(offers->count(), 1);  // taken
    QCOMPARE(lab.db().scalarText("SELECT origin FROM friction WHERE run_id IS NOT NULL"),
             "run " + std::to_string(failedRun_) + " stalled");
  }

  void trainingAndVenuesPanelsOfferTheirEntries() {
    auto& lab = *session_.store();
    // A failed run in the Training panel: Log friction… opens the entry pre-filled.
    store::NewRun nr;
    nr.name = "oom-run";
    const auto run = lab.runs().requestCreate(nr);
    lab.runs().requestStatus(run, crosslab::train::RunStatus::Failed, "GPU out of memory (ROCm)");
    {
      widgets::TrainingPanel training(&session_);
      training.show();
      QVERIFY(QTest::qWaitForWindowExposed(&training));
      auto* runs = training.findChild<QTableView*>("runsTable");
      auto* button = training.findChild<QPushButton*>("logFrictionButton");
      int row = -1;
      for (int i = 0; i < runs->model()->rowCount() && row < 0; ++i)
        for (int c = 0; c < runs->model()->columnCount(); ++c)
          if (runs->model()->index(i, c).data().toString() == "oom-run") row = i;
      QVERIFY(row >= 0);
      runs->selectRow(row);
      QTRY_VERIFY(button->isEnabled());
      QString cause;
      whenDialogOpens([&](QDialog* d) {
        cause = d->findChild<QPlainTextEdit*>("frictionCause")->toPlainText();
        QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
      });
      QTest::mouseClick(button, Qt::LeftButton);
      QCOMPARE(cause, QString("GPU out of memory (ROCm)"));
      QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM friction WHERE run_id = " + std::to_string(run)),
               std::int64_t{1});
    }
    // A box torn down with debug time in the Venues panel: asked, then the entry pre-filled.
    venues::VenueStore vs(lab);
    venues::BoxRow b;
    b.venueId = vs.ensureVenue("loop", "ssh");
    b.name = "loop";
    b.host = "127.0.0.1";
    b.user = "me";
    b.pricePerHour = 6.0;
    b.provisionedAt = ledger::isoUtc(ledger::epochNow() - 1200);
    const auto box = vs.addBox(b);
    ledger::LifeRecorder rec(lab);
    const auto w = rec.workStarted(box, ledger::WorkKind::Train, "crashed", ledger::epochNow() - 900);
    rec.workEnded(w, ledger::WorkStatus::Failed, ledger::epochNow() - 300, "Traceback");
    widgets::VenuesPanel venuesPanel(&session_);
    QStringList asked;
    venuesPanel.setConfirmer([&](const QString& title, const QString&) {
      asked << title;
      return true;
    });
    venuesPanel.refresh();
    int row = -1;
    for (int i = 0; i < venuesPanel.boxesModel()->rowCount(); ++i)
      if (venuesPanel.boxesModel()->row(i).box.name == "loop") row = i;
    QVERIFY(row >= 0);
    double minutes = 0;
    whenDialogOpens([&](QDialog* d) {
      minutes = d->findChild<QDoubleSpinBox*>("frictionMinutes")->value();
      QTest::mouseClick(d->findChild<QPushButton*>("frictionOk"), Qt::LeftButton);
    });
    venuesPanel.teardownBox(row);
    QCOMPARE(asked, QStringList({"Tear down", "Log friction"}));
    QVERIFY2(std::abs(minutes - 10.0) < 0.2, qPrintable(QString::number(minutes)));  // the failed run's 10 minutes
    QCOMPARE(lab.db().scalarText("SELECT origin FROM friction WHERE box_id = " + std::to_string(box)),
             "box " + std::to_string(box) + " deleted with debug time");
  }

  void exportReportWritesIntoReportsAndOpensTheHtml() {
    UrlCatcher catcher;
    QDesktopServices::setUrlHandler("file", &catcher, "open");
    widgets::LedgerPanel panel(&session_);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QSignalSpy done(&panel, &widgets::LedgerPanel::reportExported);
    QTest::mouseClick(panel.findChild<QPushButton*>("exportReport"), Qt::LeftButton);
    QVERIFY(panel.exporting());
    QVERIFY(!panel.findChild<QPushButton*>("exportReport")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 120000);
    QDesktopServices::unsetUrlHandler("file");
    const QString html = tmp_.filePath("lab/reports/report.html");
    QCOMPARE(done[0][1].toString(), QString());
    QCOMPARE(done[0][0].toString(), html);
    QVERIFY(QFile::exists(tmp_.filePath("lab/reports/report.md")));
    QCOMPARE(catcher.urls, QList<QUrl>{QUrl::fromLocalFile(html)});
    QVERIFY(panel.findChild<QLabel*>("ledgerStatus")->text().contains("Report written to"));
    QFile f(html);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("BOX-1, life 1") && !text.contains("mi300x"));  // redacted by default
    QCOMPARE(session_.store()->db().scalarText("PRAGMA integrity_check"), std::string("ok"));
  }
};

QTEST_MAIN(TestLedgerPanel)
#include "test_ledger_panel.moc"
