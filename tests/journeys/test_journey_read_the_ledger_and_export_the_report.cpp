// Journey: the user has a demo lab and the seed lab's four box lives imported into it with
// `crosslab-cli ledger import` (a shell next to the open window). In the window they click
// Ledger in the sidebar, read each life's ratio under its bar and the totals, log a friction
// entry through the dialog, and click Export report…: the report lands in the lab's
// reports/ and is handed to the desktop's browser. Afterwards the lab is sound and holds the
// entry, read by another process.
#include <QDesktopServices>
#include <QLabel>
#include <QLineEdit>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>

#include "tests/journeys/journey_support.h"
#include "widgets/ledger_panel.h"
#include "widgets/life_bars_chart.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

class UrlCatcher : public QObject {
  Q_OBJECT
 public:
  QList<QUrl> urls;
 public slots:
  void open(const QUrl& url) { urls << url; }
};

class TestJourneyReadTheLedgerAndExportTheReport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void readTheLedgerAndExportTheReport() {
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = std::make_unique<widgets::MainWindow>();
    QVERIFY(showAt(window.get(), 1024, 700));
    QVERIFY(window->openLab(lab.path()));
    const auto imported = runCliBesideWindow(
        {"ledger", "import", CROSSLAB_TESTS_DIR "/fixtures/seed_lab/lives.jsonl", "--lab", lab.path()});
    QVERIFY2(imported.code == 0, imported.err.constData());

    QVERIFY(showPanel(window.get(), "Ledger"));
    auto* bars = waitFor<widgets::LifeBarsChart>(window.get(), "lifeBars");
    QVERIFY(bars);
    QVERIFY(waitUntil([&] { return bars->categories().size() == 4; }, "four lives under the bars"));
    QStringList ratios;
    for (const auto& c : bars->categories()) ratios << c.section(" · ", 1);
    QCOMPARE(ratios, QStringList({"4:1", "34:1", "0.4:1", "2:1"}));
    auto* totals = waitFor<QLabel>(window.get(), "ledgerTotals");
    QVERIFY(totals->text().contains("GPU rental $21.18"));
    auto* lives = waitFor<QTableView>(window.get(), "livesTable");
    QVERIFY(rowWith(lives->model(), {"BOX-2 #1", "$12.96", "$8.89", "0.4:1"}) >= 0);

    // A friction entry typed into the dialog.
    waitFor<QTabWidget>(window.get(), "ledgerTabs")->setCurrentIndex(3);
    DialogDriver add("crosslab::widgets::FrictionDialog", [](QWidget* d) {
      return typeInto(d->findChild<QLineEdit*>("frictionTitle"), "70B pull re-done on the third life") &&
             clickButton(d, "frictionOk");
    });
    QVERIFY(clickButton(window.get(), "frictionAdd"));
    QVERIFY2(add.wait(), qPrintable(add.error()));
    auto* friction = waitFor<QTableView>(window.get(), "frictionTable");
    QVERIFY(waitUntil([&] { return rowWith(friction->model(), {"70B pull re-done on the third life"}) >= 0; },
                      "the entry in the friction table"));

    // Export report…: written into reports/, handed to the browser.
    UrlCatcher browser;
    QDesktopServices::setUrlHandler("file", &browser, "open");
    QVERIFY(clickButton(window.get(), "exportReport"));
    QVERIFY(waitUntil([&] { return !browser.urls.isEmpty(); }, "the report opened in the browser"));
    QDesktopServices::unsetUrlHandler("file");
    QCOMPARE(browser.urls, QList<QUrl>{QUrl::fromLocalFile(lab.file("reports/report.html"))});
    QVERIFY(waitFor<QLabel>(window.get(), "ledgerStatus")->text().contains("Report written to"));
    QFile md(lab.file("reports/report.md"));
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QByteArray text = md.readAll();
    QVERIFY(text.contains("| BOX-2, life 1 | 2x MI300X @ $5.98/h, 60 min minimum"));
    QVERIFY(text.contains("| demo-lora |"));  // the demo's training run in the training table
    QVERIFY(text.contains("70B pull re-done on the third life"));
    // The demo's sweeps ran against a real server: its own count of each level beside the
    // client's (at c=16, 32 requests of 16 tokens: 512), and they agree.
    QVERIFY(text.contains("### What the server counted"));
    QVERIFY2(text.contains("| demo-lora merged · local crosslab-cli serve, f32, 1 thread | 16 | 512 | 512 | yes |"),
             text.constData());
    QVERIFY(text.contains("| demo-lora runtime LoRA · local crosslab-cli serve, f32, 1 thread | 16 | 512 | 512 | yes |"));

    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(rowCount(lab.path(), "friction"), qint64(1));
    QCOMPARE(rowCount(lab.path(), "boxes"), qint64(4));
  }
};

QTEST_MAIN(TestJourneyReadTheLedgerAndExportTheReport)
#include "test_journey_read_the_ledger_and_export_the_report.moc"
