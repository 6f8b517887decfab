// The report's HTML opened in a real headless browser (Debian's chromium): it renders,
// its charts are present and drawn, and the page fetches nothing from the network (the
// browser's net log lists every request; the browser's own background requests carry no
// page origin). A control page that does fetch is caught by the same check.
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpServer>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "core/bench/bench_store.h"
#include "core/ledger/life_jsonl.h"
#include "core/report/report_builder.h"
#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;

namespace {

struct Page {
  QString dom;
  QImage shot;
  QStringList pageRequests;  // http(s)/ws requests the page itself made
};

}  // namespace

class TestReportBrowser : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  Page open(const QString& html) {
    Page page;
    const QString profile = tmp_.filePath("profile-" + QFileInfo(html).baseName());
    const QString netlog = tmp_.filePath("netlog-" + QFileInfo(html).baseName() + ".json");
    const QString png = tmp_.filePath("shot-" + QFileInfo(html).baseName() + ".png");
    const QStringList flags = {"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--disable-default-apps", "--disable-extensions", "--user-data-dir=" + profile,
                               "--log-net-log=" + netlog, "--net-log-capture-mode=Default"};
    testing::CliOptions o;
    o.timeoutMs = 120000;
    const auto dom = testing::runProgram(CHROMIUM, flags + QStringList{"--dump-dom", QUrl::fromLocalFile(html).toString()}, o);
    if (dom.code != 0) qWarning("chromium --dump-dom: %s", dom.err.right(2000).constData());
    page.dom = QString::fromUtf8(dom.out);
    const auto shot = testing::runProgram(
        CHROMIUM, flags + QStringList{"--screenshot=" + png, "--window-size=1200,5000", "--hide-scrollbars",
                                      QUrl::fromLocalFile(html).toString()},
        o);
    if (shot.code != 0) qWarning("chromium --screenshot: %s", shot.err.right(2000).constData());
    page.shot = QImage(png);
    // The net log of the screenshot run: every request, with the origin that made it.
    QFile f(netlog);
    if (f.open(QIODevice::ReadOnly)) {
      QByteArray text = f.readAll();
      // A browser killed before it closed the log leaves "]" unterminated.
      if (!text.trimmed().endsWith("}")) text = text.trimmed().chopped(1) + "]}";
      const auto root = QJsonDocument::fromJson(text).object();
      const int startJob = root.value("constants").toObject().value("logEventTypes").toObject()
                               .value("URL_REQUEST_START_JOB").toInt(-1);
      for (const auto& e : root.value("events").toArray()) {
        const auto ev = e.toObject();
        if (ev.value("type").toInt() != startJob) continue;
        const auto params = ev.value("params").toObject();
        const QString url = params.value("url").toString();
        // Browser-internal requests (component updates, time) are made by no origin.
        if (params.value("initiator").toString() == "not an origin") continue;
        if (url.startsWith("http") || url.startsWith("ws")) page.pageRequests << url;
      }
    }
    return page;
  }

  QString writeReport() {
    const std::string dir = tmp_.filePath("lab").toStdString();
    auto lab = store::LabStore::create(dir, "browser lab");
    std::istringstream lives(
        R"({"box": "BOX-1", "provider": "hotaisle", "gpu": "MI300X", "gpus": 1, "price_per_hour": 2.99, "min_minutes": 1, "provisioned_at": "2026-01-04T22:39:40Z", "deleted_at": "2026-01-04T23:26:00Z", "work": [{"kind": "train", "name": "8b-lora", "start": "2026-01-04T23:12:46Z", "end": "2026-01-04T23:18:34Z", "status": "finished"}], "transfers": [{"direction": "pull", "what": "weights", "bytes": 16060000000, "start": "2026-01-04T22:45:00Z", "end": "2026-01-04T22:47:31Z"}]})");
    ledger::importLives(lab, ledger::parseLivesJsonl(lives));
    store::NewRun nr;
    nr.name = "8b-lora";
    const auto run = lab.runs().requestCreate(nr);
    std::vector<store::MetricRow> rows;
    for (int s = 1; s <= 111; ++s) {
      store::MetricRow m;
      m.step = s;
      m.loss = 0.56 * std::exp(-s / 60.0) + 0.05 * ((s * 7919) % 13) / 13.0;
      rows.push_back(m);
    }
    lab.runs().appendMetrics(run, rows);
    bench::BenchStore bs(lab);
    const auto b = bs.begin({"1x MI300X merged", "http://127.0.0.1:1", "llama", "completions", "bench", 2.99});
    for (auto [c, agg] : std::vector<std::pair<int, double>>{{1, 25.7}, {8, 180.0}, {64, 1182.0}}) {
      bench::LevelResult l;
      l.context.maxConcurrency = c;
      l.completed = 2 * c;  // a level that completed nothing is no measurement (BenchStore drops it)
      l.outputThroughput = agg;
      l.perStreamTokS = agg / c;
      bs.saveLevel(b, l);
    }
    bs.end(b);
    report::writeReport(lab, dir + "/reports", {report::Format::Html}, venues::SecretGuard{}, {});
    return tmp_.filePath("lab/reports/report.html");
  }

 private slots:
  void theReportRendersWithItsChartsAndFetchesNothing() {
    const QString html = writeReport();
    const Page page = open(html);
    QVERIFY2(page.dom.contains("<h1>Lab report: browser lab</h1>"), qPrintable(page.dom.left(500)));
    QCOMPARE(page.dom.count("<svg "), 2);  // training loss, serving throughput
    QVERIFY(page.dom.count("<polyline class=\"series\"") >= 3);
    QVERIFY(page.dom.contains("4:1") || page.dom.contains("Cost ledger"));
    // Drawn: the screenshot has the charts' blue (#2f6fde) and plenty that is not white.
    QVERIFY2(!page.shot.isNull(), "no screenshot");
    int blue = 0, inked = 0;
    for (int y = 0; y < page.shot.height(); y += 2)
      for (int x = 0; x < page.shot.width(); x += 2) {
        const QColor c = page.shot.pixelColor(x, y);
        if (std::abs(c.red() - 0x2f) < 24 && std::abs(c.green() - 0x6f) < 24 && std::abs(c.blue() - 0xde) < 24) ++blue;
        if (c.lightness() < 200) ++inked;
      }
    QVERIFY2(blue > 50, qPrintable(QString("chart blue pixels: %1").arg(blue)));
    QVERIFY2(inked > 2000, qPrintable(QString("inked pixels: %1").arg(inked)));
    QVERIFY2(page.pageRequests.isEmpty(), qPrintable(page.pageRequests.join(", ")));
  }

  void aPageThatFetchesIsCaught() {
    // The same check on a page that does fetch (from a closed loopback port: refused at
    // once, but requested): without this, an empty list above could mean a blind net log.
    int port = 0;
    {
      QTcpServer probe;
      QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
      port = probe.serverPort();
    }
    const QString html = tmp_.filePath("control.html");
    QFile f(html);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QString("<!DOCTYPE html><html><body><p>control</p><img src=\"http://127.0.0.1:%1/x.png\"></body></html>")
                .arg(port)
                .toUtf8());
    f.close();
    const Page page = open(html);
    QVERIFY2(page.dom.contains("control"), qPrintable(page.dom.left(300)));
    QVERIFY2(!page.pageRequests.isEmpty(), "the control page's fetch was not seen");
    QVERIFY(page.pageRequests.first().startsWith(QString("http://127.0.0.1:%1/").arg(port)));
  }
};

QTEST_MAIN(TestReportBrowser)
#include "test_report_browser.moc"
