// The Benchmarks panel, offscreen: a real sweep through crosslab-cli against the
// loopback stand-in server, the live chart fed while it runs, the lab's table with
// its columns, comparison bars for selected rows, CSV/JSON export, Stop, and the
// chart's coalesced repaints and decimation. The local-server endpoint: the panel starts
// `crosslab-cli serve` on a tiny checkpoint in the lab's models/demo-base with a run's
// adapter, sweeps it, and the child is gone after Stop server, a cancelled start and a
// lab change; a server that exits early shows its last lines.
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QColor>
#include <QComboBox>
#include <QDir>
#include <QListWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include <cerrno>

#include "backends/bench/bench_process.h"
#include "backends/bench/standin_server.h"
#include "backends/lab_session.h"
#include "backends/serve/local_serve_process.h"
#include "core/bench/bench_store.h"
#include "widgets/bench_live_chart.h"
#include "widgets/bench_results_model.h"
#include "widgets/benchmarks_panel.h"
#include "tests/serve/serve_fixture.h"

using namespace crosslab;
using widgets::BenchmarksPanel;
using backends::LocalServeProcess;

namespace {

// True while a process with this id exists (QProcess reaps its child, so a gone child
// is gone from the process table too).
bool alive(qint64 pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno != ESRCH); }

}  // namespace

class TestBenchmarksPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  // A sweep recorded in `lab`, done: one level per (concurrency, output tok/s), 4 requests each.
  static void record(store::LabStore& lab, const std::string& label, const std::vector<std::pair<int, double>>& levels) {
    bench::BenchStore bs(lab);
    const auto id = bs.begin({label, "http://x", "m", "completions", "crosslab-cli bench", {}});
    for (const auto& [c, tokS] : levels) {
      bench::LevelResult l;
      l.context.maxConcurrency = c;
      l.completed = 4;
      l.outputThroughput = tokS;
      l.perStreamTokS = tokS / c;
      QVERIFY(bs.saveLevel(id, l));
    }
    bs.end(id);
  }

  // What the comparison chart shows: bar set name → values.
  static QMap<QString, QList<qreal>> compared(BenchmarksPanel& p) {
    QMap<QString, QList<qreal>> out;
    for (auto* series : p.findChild<QChartView*>("compareChart")->chart()->series())
      if (auto* bars = qobject_cast<QBarSeries*>(series))
        for (auto* set : bars->barSets()) {
          QList<qreal>& values = out[set->label()];
          for (int i = 0; i < set->count(); ++i) values << set->at(i);
        }
    return out;
  }

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
    QCOMPARE(model->headerData(3, Qt::Horizontal).toString(), QString("c=1 tok/s"));
    QCOMPARE(model->data(model->index(0, 1)).toString(), QString("done"));
    QVERIFY(model->throughputAt(0, 2) > 0);
    QVERIFY(model->data(model->index(0, 5)).toString().contains("(c="));  // best aggregate
    QVERIFY(model->data(model->index(0, 6)).toString().startsWith("$"));  // $/M

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
    QVERIFY2(text.startsWith("Venue / method,Status,1-stream tok/s,c=1 tok/s,c=2 tok/s,Best aggregate tok/s,"
                             "Best at concurrency,$/M output,Collapse,Error\n"),
             qPrintable(text));
    QVERIFY(text.contains("\"stand-in, loopback\",done,"));
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
    QCOMPARE(panel.results()->rowCount(), 1);  // the sweep's row, stopped
    QCOMPARE(panel.results()->data(panel.results()->index(0, 1)).toString(), QString("stopped"));
    QCOMPARE(panel.results()->levels(), std::vector<int>{});  // the cut level completed nothing: no 0 tok/s figure
  }

  void refusesAnIncompleteForm() {
    backends::LabSession session;
    BenchmarksPanel panel(&session);
    panel.findChild<QLineEdit*>("model")->clear();
    QVERIFY(!panel.run());
    QVERIFY(panel.status().contains("model"));
    QVERIFY(!panel.isRunning());
  }

  // A level the live check stopped completed nothing: the cell says "collapse" with no rate, the
  // CSV leaves the figure empty, the comparison chart has no point there, the best stays c=4.
  // The rows compared: a lab's newest sweeps when it opens; then the user's choice, kept when
  // the table reloads (a write to the lab) even when it is nothing, with a new sweep added; and
  // nothing of it kept for another lab, though that lab's rows have the same ids and levels.
  void comparisonKeepsTheChoiceAcrossReloadsNotAcrossLabs() {
    backends::LabSession session;
    QString error;
    const QString a = tmp_.filePath("compare-a"), b = tmp_.filePath("compare-b");
    QVERIFY2(session.requestCreate(b, "b", &error), qPrintable(error));
    record(*session.store(), "b one", {{1, 10}, {4, 30}});
    record(*session.store(), "b two", {{1, 11}, {4, 33}});
    record(*session.store(), "b three", {{1, 12}});
    QVERIFY2(session.requestCreate(a, "a", &error), qPrintable(error));
    record(*session.store(), "a one", {{1, 100}, {4, 300}});
    record(*session.store(), "a two", {{1, 110}, {4, 330}});
    BenchmarksPanel panel(&session);
    panel.resize(1024, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* tabs = panel.findChild<QTabWidget*>("chartTabs");
    auto* table = panel.findChild<QTableView*>("resultsTable");
    QVERIFY(tabs && table);
    panel.reload();  // as the lab's first look at it does
    QCOMPARE(compared(panel), (QMap<QString, QList<qreal>>{{"a one", {100, 300}}, {"a two", {110, 330}}}));
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(panel.findChild<QChartView*>("compareChart")));

    const auto clickRow = [&](int row, Qt::KeyboardModifiers mods = {}) {
      QTest::mouseClick(table->viewport(), Qt::LeftButton, mods, table->visualRect(table->model()->index(row, 0)).center());
    };
    clickRow(1);
    QCOMPARE(compared(panel).keys(), QStringList{"a two"});
    clickRow(1, Qt::ControlModifier);  // unselected: nothing compared
    QCOMPARE(panel.comparedSets(), 0);
    panel.reload();  // a write to the lab, a level finished: the empty choice stays
    QCOMPARE(panel.comparedSets(), 0);
    clickRow(0);
    record(*session.store(), "a three", {{1, 120}});
    panel.reload();
    QCOMPARE(compared(panel).keys(), (QStringList{"a one", "a three"}));

    clickRow(1, Qt::ControlModifier);
    QCOMPARE(panel.comparedSets(), 3);

    // Lab b: benchmarks 1, 2 and 3 at lab a's levels, its three rows the ones it opens on (the
    // rows selected in lab a): its own names and figures, not a's.
    QVERIFY2(session.requestOpen(b, &error), qPrintable(error));
    QCOMPARE(compared(panel),
             (QMap<QString, QList<qreal>>{{"b one", {10, 30}}, {"b two", {11, 33}}, {"b three", {12, 0}}}));
  }

  void aLevelStoppedLiveShowsNoRate() {
    bench::StoredBenchmark b;
    b.header.label = "stopped live";
    b.levels = {{1, 4, 0, 3.2, 3.2, 100, 320, std::nullopt, "", "{}"},
                {4, 8, 0, 12.1, 3.0, 200, 340, std::nullopt, "", "{}"},
                {8, 0, 16, 0.0, 0.0, 0, 0, std::nullopt, "decode collapse: per-stream 0.7 tok/s over the last 5 s",
                 "{}"}};
    widgets::BenchResultsModel m;
    m.setBenchmarks({b});
    QCOMPARE(m.data(m.index(0, 5)).toString(), QString("collapse"));
    QCOMPARE(m.data(m.index(0, 5), Qt::ForegroundRole).value<QColor>(), QColor(Qt::red));
    QVERIFY(m.data(m.index(0, 5), Qt::ToolTipRole).toString().startsWith("0 completed, 16 failed\ndecode collapse"));
    QCOMPARE(m.data(m.index(0, 6)).toString(), QString("12.1 (c=4)"));
    QCOMPARE(m.throughputAt(0, 8), -1.0);
    QCOMPARE(m.throughputAt(0, 4), 12.1);
    QVERIFY2(m.toCsv().contains("\nstopped live,done,3.2,3.2,12.1,,12.1,4,,decode collapse"), qPrintable(m.toCsv()));
  }

  // A one-stream rate the lab holds as NULL (every reply read at once): "not measured", not 0.0,
  // in the table, and empty in the CSV and null in the JSON exports.
  void anUnmeasuredOneStreamRateIsNotZero() {
    bench::StoredBenchmark b;
    b.header.label = "read at once";
    b.levels = {{1, 4, 0, 3.2, 0.0, 100, 320, std::nullopt, "", "{}", false}};
    widgets::BenchResultsModel m;
    m.setBenchmarks({b});
    QCOMPARE(m.data(m.index(0, 2)).toString(), QString("not measured"));
    QVERIFY2(m.toCsv().contains("\nread at once,done,,3.2,"), qPrintable(m.toCsv()));
    QVERIFY(m.toJson()[0].toObject()["levels"].toArray()[0].toObject()["per_stream_tok_s"].isNull());
  }

  void modelMarksCollapseAndPicksBestAggregate() {
    bench::StoredBenchmark b;
    b.header.label = "2x Spark, runtime LoRA";
    b.levels = {{1, 4, 0, 3.2, 3.2, 100, 320, std::nullopt, "", "{}"},
                {4, 8, 0, 12.1, 3.0, 200, 340, 0.25, "", "{}"},
                {8, 2, 6, 5.6, 0.7, 900, 1400, std::nullopt, "decode collapse: per-stream 0.7 tok/s", "{}"}};
    widgets::BenchResultsModel m;
    m.setBenchmarks({b});
    QCOMPARE(m.columnCount(), 3 + 3 + 3);
    QCOMPARE(m.data(m.index(0, 1)).toString(), QString("done"));
    QCOMPARE(m.data(m.index(0, 2)).toString(), QString("3.2"));              // 1-stream
    QCOMPARE(m.data(m.index(0, 5)).toString(), QString("5.6 (collapse)"));   // c=8
    QCOMPARE(m.data(m.index(0, 5), Qt::ForegroundRole).value<QColor>(), QColor(Qt::red));
    QCOMPARE(m.data(m.index(0, 6)).toString(), QString("12.1 (c=4)"));      // best aggregate
    QCOMPARE(m.data(m.index(0, 7)).toString(), QString("$0.250"));          // $/M at the best level
    QVERIFY(m.data(m.index(0, 8)).toString().startsWith("decode collapse"));
    // CSV: figures as numbers, the best level and the collapse in their own columns.
    QVERIFY2(m.toCsv().contains("\"2x Spark, runtime LoRA\",done,3.2,3.2,12.1,5.6,12.1,4,0.250,"
                                "decode collapse: per-stream 0.7 tok/s,\n"),
             qPrintable(m.toCsv()));

    // A failed sweep: its error, no figures, in red.
    bench::StoredBenchmark f;
    f.header.label = "wrong model";
    f.status = bench::SweepStatus::Failed;
    f.error = "every request failed at concurrency 1: HTTP 404";
    m.setBenchmarks({b, f});
    QCOMPARE(m.data(m.index(1, 1)).toString(), QString("failed"));
    QCOMPARE(m.data(m.index(1, 1), Qt::ForegroundRole).value<QColor>(), QColor(Qt::red));
    for (int c = 2; c < 8; ++c) QVERIFY(m.data(m.index(1, c)).toString().isEmpty());
    QCOMPARE(m.data(m.index(1, 8)).toString(), QString::fromStdString(f.error));
    QVERIFY(m.toCsv().contains("wrong model,failed,,,,,,,,,every request failed at concurrency 1: HTTP 404\n"));

    // The headers say what each figure counts: one stream's decode pace leaves the first token's
    // wait out, a level's output rate has it in (so c=1's figure can be well under 1-stream's).
    const auto tip = [&](int column) { return m.headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString(); };
    QVERIFY2(tip(2).startsWith("One stream's decode rate") && tip(2).contains("time to first token left out"),
             qPrintable(tip(2)));
    for (int c = 3; c < 6; ++c)
      QVERIFY2(tip(c).contains("time to first token and the gaps between requests in") &&
                   tip(c).contains("output_throughput"), qPrintable(tip(c)));
    QVERIFY(tip(6).startsWith("The highest c=N figure"));
    QVERIFY(tip(7).startsWith("Dollars per million output tokens"));
    QVERIFY(tip(0).isEmpty() && tip(8).isEmpty());
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

  // A lab with the serving fixture as models/demo-base and one run with an adapter.
  QString localLab(backends::LabSession& session, const QString& name) {
    QString error;
    const QString lab = tmp_.filePath(name);
    if (!session.requestCreate(lab, name, &error)) qFatal("%s", qPrintable(error));
    const auto spec = testing::writeServeFixture((lab + "/models/demo-base").toStdString());
    testing::writeTinyLora((lab + "/runs/run-a").toStdString(), spec, 8, 16, false, 11);
    QDir().mkpath(lab + "/runs/no-adapter");  // a run without an adapter is not offered
    return lab;
  }

  void useLocalServer(BenchmarksPanel& p, const QString& model, int prompts, int outputLen) {
    p.findChild<QComboBox*>("endpointKind")->setCurrentIndex(1);
    p.findChild<QLineEdit*>("model")->setText(model);
    p.findChild<QLineEdit*>("levels")->setText("1");
    p.findChild<QSpinBox*>("numPrompts")->setValue(prompts);
    p.findChild<QSpinBox*>("outputLen")->setValue(outputLen);
    p.findChild<QSpinBox*>("serveMaxBatch")->setValue(4);
    p.process()->setCliPath(CROSSLAB_CLI);
    p.server()->setCliPath(CROSSLAB_CLI);
  }

  void localServerSweepThenStop() {
    backends::LabSession session;
    const QString lab = localLab(session, "locallab");
    BenchmarksPanel panel(&session);
    panel.show();
    QCOMPARE(panel.findChild<QLineEdit*>("serveModelDir")->text(), lab + "/models/demo-base");  // the default
    auto* adapters = panel.findChild<QListWidget*>("serveAdapters");
    QCOMPARE(adapters->count(), 1);
    QCOMPARE(adapters->item(0)->text(), QString("run-a"));
    adapters->item(0)->setCheckState(Qt::Checked);
    useLocalServer(panel, "run-a", 2, 4);  // the run's adapter, applied at run time

    QSignalSpy ready(panel.server(), &LocalServeProcess::ready);
    QSignalSpy done(&panel, &BenchmarksPanel::sweepFinished);
    QVERIFY(panel.run());
    QCOMPARE(panel.findChild<QLabel*>("levelLabel")->text(), QString("starting server…"));
    QVERIFY(!panel.findChild<QPushButton*>("runButton")->isEnabled());
    QVERIFY(done.wait(120000));
    QCOMPARE(ready.count(), 1);
    QCOMPARE(done.first().first().toInt(), 0);
    QVERIFY2(panel.status().startsWith("Sweep done"), qPrintable(panel.status()));
    QCOMPARE(panel.server()->state(), LocalServeProcess::State::Ready);
    QVERIFY(panel.server()->serveArgs().contains("run-a=" + lab + "/runs/run-a"));
    QVERIFY(panel.findChild<QLineEdit*>("url")->text().startsWith("http://127.0.0.1:"));

    QCOMPARE(panel.results()->rowCount(), 1);  // in the table…
    QCOMPARE(panel.results()->levels(), std::vector<int>{1});
    QVERIFY(panel.results()->throughputAt(0, 1) > 0);
    const auto stored = bench::BenchStore(*session.store()).list();  // …and in the store
    QCOMPARE(stored.size(), size_t(1));
    QCOMPARE(stored[0].header.model, std::string("run-a"));
    QCOMPARE(stored[0].levels.size(), size_t(1));
    QCOMPARE(stored[0].levels[0].completed, int64_t(2));
    QCOMPARE(stored[0].levels[0].failed, int64_t(0));

    const qint64 pid = panel.server()->processId();
    QVERIFY(alive(pid));
    QSignalSpy stopped(panel.server(), &LocalServeProcess::stopped);
    panel.findChild<QPushButton*>("stopServerButton")->click();
    QVERIFY(stopped.wait(30000));
    QVERIFY(!panel.server()->isRunning());
    QVERIFY(!alive(pid));
    QCOMPARE(panel.server()->state(), LocalServeProcess::State::Idle);
  }

  void localServerStartCanBeCancelledAndEndsWithTheLab() {
    backends::LabSession session;
    localLab(session, "cancellab");
    BenchmarksPanel panel(&session);
    useLocalServer(panel, "", 1, 2);
    // Cancel while starting: Stop ends the child and no sweep runs.
    QSignalSpy stopped(panel.server(), &LocalServeProcess::stopped);
    QSignalSpy ready(panel.server(), &LocalServeProcess::ready);
    QVERIFY(panel.run());
    QTRY_VERIFY_WITH_TIMEOUT(panel.server()->processId() > 0, 10000);
    const qint64 first = panel.server()->processId();
    panel.stop();
    QVERIFY(stopped.wait(30000));
    QVERIFY(!alive(first));
    QCOMPARE(ready.count(), 0);
    QVERIFY(!panel.process()->isRunning());
    QVERIFY(panel.findChild<QPushButton*>("runButton")->isEnabled());
    QVERIFY2(panel.status().contains("cancelled"), qPrintable(panel.status()));

    // Up and serving (the model id defaults to the folder's name), then the lab changes.
    QSignalSpy done(&panel, &BenchmarksPanel::sweepFinished);
    QVERIFY(panel.run());
    QVERIFY(done.wait(120000));
    QCOMPARE(done.first().first().toInt(), 0);
    QCOMPARE(bench::BenchStore(*session.store()).list().at(0).header.model, std::string("demo-base"));
    const qint64 second = panel.server()->processId();
    QVERIFY(alive(second));
    QString error;
    QVERIFY(session.requestCreate(tmp_.filePath("otherlab"), "other", &error));
    QVERIFY(stopped.wait(30000));
    QVERIFY(!alive(second));
    QVERIFY(panel.findChild<QLineEdit*>("serveModelDir")->text().isEmpty());  // no demo-base in the new lab
    QCOMPARE(panel.findChild<QListWidget*>("serveAdapters")->count(), 0);
  }

  void localServerThatExitsEarlyShowsItsLastLines() {
    backends::LabSession session;
    QString error;
    QVERIFY(session.requestCreate(tmp_.filePath("badlab"), "bad", &error));
    const QString notAModel = tmp_.filePath("not-a-model");
    QVERIFY(QDir().mkpath(notAModel));
    BenchmarksPanel panel(&session);
    useLocalServer(panel, "x", 1, 2);
    panel.findChild<QLineEdit*>("serveModelDir")->setText(notAModel);
    QSignalSpy failed(panel.server(), &LocalServeProcess::failed);
    QVERIFY(panel.run());
    QVERIFY(failed.wait(60000));
    QVERIFY2(panel.status().startsWith("Local server failed: the server exited with code"), qPrintable(panel.status()));
    QVERIFY2(panel.status().contains("config.json"), qPrintable(panel.status()));  // the CLI's own reason
    QVERIFY(panel.findChild<QPushButton*>("runButton")->isEnabled());
    QVERIFY(!panel.process()->isRunning());

    panel.findChild<QLineEdit*>("serveModelDir")->setText(tmp_.filePath("no/such/folder"));
    QVERIFY(!panel.run());  // refused before any process starts
    QVERIFY(panel.status().contains("is not a folder"));
    panel.findChild<QComboBox*>("serveLoraMode")->setCurrentIndex(1);
    panel.findChild<QLineEdit*>("serveModelDir")->setText(notAModel);
    QVERIFY(!panel.run());
    QVERIFY(panel.status().contains("exactly one"));
  }
};

QTEST_MAIN(TestBenchmarksPanel)
#include "test_benchmarks_panel.moc"
