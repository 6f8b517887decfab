// The Benchmarks panel, offscreen: a real sweep through crosslab-cli against the
// loopback stand-in server, the live chart fed while it runs, the lab's table with
// its columns, comparison bars for selected rows, CSV/JSON export, Stop, and the
// chart's coalesced repaints and decimation.
#include <QColor>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "backends/bench/bench_process.h"
#include "backends/bench/standin_server.h"
#include "backends/lab_session.h"
#include "core/bench/bench_store.h"
#include "widgets/bench_live_chart.h"
#include "widgets/bench_results_model.h"
#include "widgets/benchmarks_panel.h"

using namespace crosslab;
using widgets::BenchmarksPanel;

class TestBenchmarksPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  void fill(BenchmarksPanel& p, const std::string& url, const QString& levels, int prompts, int outputLen) {
    p.findChild<QLineEdit*>("url")->setText(QString::fromStdString(url));
    p.findChild<QLineEdit*>("model")->setText("standin");
    p.findChild<QLineEdit*>("levels")->setText(levels);
    p.findChild<QSpinBox*>("numPrompts")->setValue(prompts);
    p.findChild<QSpinBox*>("outputLen")->setValue(outputLen);
    p.process()->setCliPath(CROSSLAB_CLI);
  }

 private slots:
  void sweepFillsChartTableComparisonAndExports() {
    backends::LabSession session;
    QString error;
    QVERIFY2(session.requestCreate(tmp_.filePath("lab"), "panel", &error), qPrintable(error));
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    backends::StandinServer server(cfg);
    server.start();
    BenchmarksPanel panel(&session);
    panel.show();
    fill(panel, server.baseUrl(), "1,2", 4, 120);
    panel.findChild<QDoubleSpinBox*>("price")->setValue(2.99);
    panel.findChild<QLineEdit*>("label")->setText("stand-in, loopback");
    QSignalSpy done(&panel, &BenchmarksPanel::sweepFinished);
    QVERIFY(panel.run());
    QVERIFY(!panel.findChild<QPushButton*>("runButton")->isEnabled());
    QVERIFY(done.wait(60000));
    QCOMPARE(done.first().first().toInt(), 0);
    QVERIFY2(panel.status().startsWith("Sweep done"), qPrintable(panel.status()));
    QTRY_VERIFY(panel.liveChart()->ttftPoints() == 8);  // every completed request
    QVERIFY(panel.liveChart()->aggregatePoints() > 0);

    auto* model = panel.results();
    QCOMPARE(model->rowCount(), 1);
    QCOMPARE(model->levels(), (std::vector<int>{1, 2}));
    QCOMPARE(model->headerData(2, Qt::Horizontal).toString(), QString("c=1 tok/s"));
    QVERIFY(model->throughputAt(0, 2) > 0);
    QVERIFY(model->data(model->index(0, 4)).toString().contains("(c="));  // best aggregate
    QVERIFY(model->data(model->index(0, 5)).toString().startsWith("$"));  // $/M

    // A second venue, recorded by another sweep, to compare side by side.
    bench::BenchStore bs(*session.store());
    const auto other = bs.begin({"other venue", "http://x", "standin", "completions", "crosslab-cli bench", {}});
    bench::LevelContext ctx;
    ctx.maxConcurrency = 2;
    bs.saveLevel(other, bench::computeLevelMetrics({}, 1.0, ctx));
    panel.reload();
    auto* table = panel.findChild<QTableView*>("resultsTable");
    table->selectAll();
    QCOMPARE(panel.comparedSets(), 2);
    table->clearSelection();
    QCOMPARE(panel.comparedSets(), 0);

    const QString csv = tmp_.filePath("t.csv"), json = tmp_.filePath("t.json");
    QVERIFY(panel.exportCsv(csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    QVERIFY2(text.startsWith("Venue / method,1-stream tok/s,c=1 tok/s,c=2 tok/s,Best aggregate,$/M output,Collapse\n"),
             qPrintable(text));
    QVERIFY(text.contains("\"stand-in, loopback\","));
    QVERIFY(panel.exportJson(json));
    QFile jf(json);
    QVERIFY(jf.open(QIODevice::ReadOnly));
    const auto arr = QJsonDocument::fromJson(jf.readAll()).array();
    QCOMPARE(arr.size(), 2);
    QCOMPARE(arr[0].toObject()["levels"].toArray().size(), 2);
    QVERIFY(!panel.exportCsv(tmp_.filePath("no/such/dir/t.csv")));  // fails cleanly
  }

  void stopEndsTheSweepAndKeepsTheLab() {
    backends::LabSession session;
    QString error;
    QVERIFY(session.requestCreate(tmp_.filePath("lab2"), "stop", &error));
    backends::StandinConfig cfg;
    cfg.intervalS = 0.01;  // 2000 tokens = 20 s: Stop comes long before
    backends::StandinServer server(cfg);
    server.start();
    BenchmarksPanel panel(&session);
    fill(panel, server.baseUrl(), "1,4", 2, 2000);
    QSignalSpy ticks(panel.process(), &backends::BenchProcess::tick);
    QSignalSpy done(&panel, &BenchmarksPanel::sweepFinished);
    QVERIFY(panel.run());
    QVERIFY(ticks.wait(30000));
    QVERIFY(panel.findChild<QLabel*>("levelLabel")->text().startsWith("level c=1 (1 of 2)"));
    panel.stop();
    QVERIFY(done.wait(30000));
    QVERIFY2(panel.status().startsWith("Stopped"), qPrintable(panel.status()));
    QVERIFY(panel.findChild<QPushButton*>("runButton")->isEnabled());
    QCOMPARE(panel.results()->rowCount(), 1);  // the sweep's row, with the cut level
    QCOMPARE(panel.results()->levels(), std::vector<int>{1});
  }

  void refusesAnIncompleteForm() {
    backends::LabSession session;
    BenchmarksPanel panel(&session);
    panel.findChild<QLineEdit*>("model")->clear();
    QVERIFY(!panel.run());
    QVERIFY(panel.status().contains("model"));
    QVERIFY(!panel.isRunning());
  }

  void modelMarksCollapseAndPicksBestAggregate() {
    bench::StoredBenchmark b;
    b.header.label = "2x Spark, runtime LoRA";
    b.levels = {{1, 4, 0, 3.2, 3.2, 100, 320, std::nullopt, "", "{}"},
                {4, 8, 0, 12.1, 3.0, 200, 340, 0.25, "", "{}"},
                {8, 2, 6, 5.6, 0.7, 900, 1400, std::nullopt, "decode collapse: per-stream 0.7 tok/s", "{}"}};
    widgets::BenchResultsModel m;
    m.setBenchmarks({b});
    QCOMPARE(m.columnCount(), 2 + 3 + 3);
    QCOMPARE(m.data(m.index(0, 1)).toString(), QString("3.2"));              // 1-stream
    QCOMPARE(m.data(m.index(0, 4)).toString(), QString("5.6 (collapse)"));   // c=8
    QCOMPARE(m.data(m.index(0, 4), Qt::ForegroundRole).value<QColor>(), QColor(Qt::red));
    QCOMPARE(m.data(m.index(0, 5)).toString(), QString("12.1 (c=4)"));      // best aggregate
    QCOMPARE(m.data(m.index(0, 6)).toString(), QString("$0.250"));          // $/M at the best level
    QVERIFY(m.data(m.index(0, 7)).toString().startsWith("decode collapse"));
    QVERIFY(m.toCsv().contains("\"2x Spark, runtime LoRA\",3.2,3.2,12.1,5.6 (collapse),12.1 (c=4),$0.250,"));
  }

  void chartCoalescesRepaintsAndDecimates() {
    widgets::BenchLiveChart chart;
    const int before = chart.flushCount();
    for (int i = 0; i < 5000; ++i) chart.addRates(i * 0.01, 100 + i, 10);
    QCOMPARE(chart.flushCount(), before);  // nothing drawn synchronously
    QTRY_COMPARE(chart.flushCount(), before + 1);  // one repaint for 5000 points
    QVERIFY(chart.aggregatePoints() <= widgets::BenchLiveChart::kMaxPoints + 1);
    QVERIFY(chart.aggregatePoints() > widgets::BenchLiveChart::kMaxPoints / 2);
  }
};

QTEST_MAIN(TestBenchmarksPanel)
#include "test_benchmarks_panel.moc"
