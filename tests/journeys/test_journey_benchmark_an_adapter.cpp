// Journey: a user opens the demo lab at 1024×700, goes to Benchmarks, picks the local
// server, ticks the demo LoRA adapter, sets a stream interval, runs a sweep (the panel starts
// a real `crosslab-cli serve` child with that interval and a real `crosslab-cli bench`
// child), reads the live chart, the progress and the table, points a sweep at a model the
// server does not have (HTTP 404), exports the table as CSV through the real save dialog,
// stops the server and starts a new lab. Checks what the user sees (axis range against the
// plotted rates, progress text, table cells, the Model field) and what the lab holds
// afterwards (integrity_check, the benchmarks rows: the adapter as the model measured, every
// token of every request, the failed sweep as failed with its error and no level rows), and
// the server child's command line. Issue 11 items 5 and 6 (Benchmarks at 1024×700); the
// stream interval, issue 14.
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QComboBox>
#include <QFile>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QRegularExpression>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QValueAxis>
#include <QtTest>

#include <signal.h>

#include <cerrno>
#include <memory>

#include "backends/bench/bench_process.h"
#include "backends/bench/standin_server.h"
#include "backends/lab_session.h"
#include "backends/serve/local_serve_process.h"
#include "tests/journeys/journey_support.h"
#include "widgets/bench_live_chart.h"
#include "widgets/bench_results_model.h"
#include "widgets/benchmarks_panel.h"
#include "widgets/main_window.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

// Scrolls the panel to `w` (as a user would, after any pending relayout) and clicks it.
bool scrollAndClick(QScrollArea* scroll, QWidget* w) {
  if (!waitUntil([&] { return scroll->ensureWidgetVisible(w), !w->visibleRegion().isEmpty(); },
                 w->objectName() + " to be brought into view"))
    return false;
  return click(w);
}

bool typeIntoSpin(QSpinBox* spin, int value) { return spin && typeInto(spin->findChild<QLineEdit*>(), QString::number(value)); }

// Toggles the check box of an item of a checkable list with the keyboard (select, Space).
bool toggleItem(QListWidget* list, int row) {
  if (!list || row >= list->count()) return false;
  const Qt::CheckState before = list->item(row)->checkState();
  list->setFocus();
  list->setCurrentRow(row);
  QTest::keyClick(list->viewport(), Qt::Key_Space);
  return waitUntil([&] { return list->item(row)->checkState() != before; }, "the adapter's check box to toggle");
}

// What the comparison chart shows: each bar set's name and values, in the legend's order.
QList<QPair<QString, QList<qreal>>> barSets(QChartView* chart) {
  QList<QPair<QString, QList<qreal>>> sets;
  for (auto* series : chart->chart()->series())
    if (auto* bars = qobject_cast<QBarSeries*>(series))
      for (auto* set : bars->barSets()) {
        QList<qreal> values;
        for (int i = 0; i < set->count(); ++i) values << set->at(i);
        sets << qMakePair(set->label(), values);
      }
  return sets;
}

QStringList barLabels(QChartView* chart) {
  QStringList labels;
  for (const auto& set : barSets(chart)) labels << set.first;
  return labels;
}

// Clicks the cell (row, 0) of a table as a user would.
bool clickRow(QTableView* table, int row) {
  const QRect cell = table->visualRect(table->model()->index(row, 0));
  if (cell.isEmpty()) return false;
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
  return true;
}

// Shows `window` at 1024×700, opens the lab at `labPath` through the Lab menu and goes to
// Benchmarks; the panel, or null if a step failed (it says which).
widgets::BenchmarksPanel* openBenchmarks(widgets::MainWindow* window, const QString& labPath) {
  if (!showAt(window, 1024, 700) || !openLabFromMenu(window, labPath) || !showPanel(window, "Benchmarks"))
    return nullptr;
  return waitFor<widgets::BenchmarksPanel>(window, "panel_benchmarks");
}

bool alive(qint64 pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno != ESRCH); }

}  // namespace

class TestJourneyBenchmarkAnAdapter : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void sweepAnAdapterThenAFailingModel() {
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = std::make_unique<widgets::MainWindow>();
    auto* panel = openBenchmarks(window.get(), lab.path());
    QVERIFY(panel);
    auto* scroll = panel->findChild<QScrollArea*>();
    QVERIFY(chooseInCombo(waitFor<QComboBox>(panel, "endpointKind"), "Local server (crosslab-cli serve)"));

    // At 1024×700 the local-server block keeps its size; Stop server can be reached.
    auto* box = waitFor<QWidget>(panel, "localServerBox");
    QVERIFY(box);
    QVERIFY(waitUntil([&] { return box->height() >= box->minimumSizeHint().height(); },
                      QString("the local-server block to get its %1 px (it has %2)").arg(box->minimumSizeHint().height()).arg(box->height())));
    auto* stopServer = waitFor<QPushButton>(panel, "stopServerButton");
    QVERIFY(waitUntil([&] { return scroll->ensureWidgetVisible(stopServer), !stopServer->visibleRegion().isEmpty(); },
                      "Stop server to be brought into view"));
    QVERIFY(stopServer->height() >= stopServer->minimumSizeHint().height());

    // Tick the adapter: the Model field names it.
    auto* adapters = waitFor<QListWidget>(panel, "serveAdapters");
    QVERIFY(waitUntil([&] { return adapters->count() == 1; }, "the lab's one adapter to be offered"));
    QCOMPARE(adapters->item(0)->text(), QString("demo-lora"));
    QVERIFY(toggleItem(adapters, 0));
    auto* model = waitFor<QLineEdit>(panel, "model");
    QCOMPARE(model->text(), QString("demo-lora"));

    // The demo lab comes with its own sweeps (merged and runtime LoRA): ours are added after them.
    auto* results = panel->results();
    const int before = labQuery(lab.path(), "SELECT count(*) FROM benchmarks").value(0).toInt();
    QVERIFY(waitUntil([&] { return results->rowCount() == before; }, "the lab's sweeps in the table"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "levels"), "1,4"));
    QVERIFY(typeIntoSpin(panel->findChild<QSpinBox*>("numPrompts"), 8));
    // Four requests first, not measured (none by default, as vLLM's bench).
    auto* warmup = panel->findChild<QSpinBox*>("warmup");
    QVERIFY(warmup);
    QCOMPARE(warmup->text(), QString("none"));
    QVERIFY(typeIntoSpin(warmup, 4));
    QVERIFY(typeIntoSpin(panel->findChild<QSpinBox*>("outputLen"), 48));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "label"), "demo runtime LoRA"));
    // Four tokens per write after each stream's first: the server is started with it.
    auto* interval = panel->findChild<QSpinBox*>("serveStreamInterval");
    QVERIFY(interval);
    QCOMPARE(interval->value(), 1);  // every token, as vLLM streams, unless the user asks
    QVERIFY(waitUntil([&] { return scroll->ensureWidgetVisible(interval), !interval->visibleRegion().isEmpty(); },
                      "Stream interval to be brought into view"));
    QVERIFY(typeIntoSpin(interval, 4));
    QSignalSpy finished(panel, &widgets::BenchmarksPanel::sweepFinished);
    QSignalSpy serverFailed(panel->server(), &backends::LocalServeProcess::failed);
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("runButton")));
    QVERIFY(waitUntil([&] { return finished.count() == 1 || serverFailed.count() > 0; }, "the sweep to finish", kTrainWaitMs));
    QVERIFY2(serverFailed.isEmpty(), qPrintable(panel->status()));
    QCOMPARE(finished.last().first().toInt(), 0);
    QVERIFY2(panel->status().startsWith("Sweep done"), qPrintable(panel->status()));

    // Progress after the sweep: done, full; not "idle 12%".
    auto* progress = panel->findChild<QProgressBar*>("progress");
    QCOMPARE(panel->findChild<QLabel*>("levelLabel")->text(), QString("done: 2 levels"));
    QCOMPARE(progress->value(), progress->maximum());
    QCOMPARE(progress->text(), QString("100%"));

    // The live chart's tok/s axis follows the plotted rates.
    auto* live = panel->liveChart();
    const double top = live->maxPlottedRate();
    const QPointF range = live->rateAxisRange();
    QVERIFY2(top > 1.0, qPrintable(QString("live rates never rose above %1 tok/s").arg(top)));
    QVERIFY2(range.y() >= top && range.y() <= top * 1.5,
             qPrintable(QString("axis 0..%1 for rates up to %2").arg(range.y()).arg(top)));

    // The table and the lab: the adapter was measured.
    QCOMPARE(results->rowCount(), before + 1);
    QCOMPARE(results->data(results->index(before, 0)).toString(), QString("demo runtime LoRA"));
    QCOMPARE(results->data(results->index(before, 1)).toString(), QString("done"));
    QVERIFY(results->throughputAt(before, 4) > 0);
    QCOMPARE(labQuery(lab.path(), "SELECT model || ' ' || status || ' ' || (SELECT count(*) FROM benchmark_levels "
                                  "WHERE benchmark_id = b.id) FROM benchmarks b WHERE label = 'demo runtime LoRA'"),
             QStringList{"demo-lora done 2"});
    // The server child runs with the stream interval the user typed, and grouping tokens lost
    // none: at each level every request completed with all its 48 tokens.
    QFile cmdline(QString("/proc/%1/cmdline").arg(panel->server()->processId()));
    QVERIFY(cmdline.open(QIODevice::ReadOnly));
    const QList<QByteArray> argv = cmdline.readAll().split('\0');
    const qsizetype at = argv.indexOf("--stream-interval");
    QVERIFY2(at >= 0 && at + 1 < argv.size() && argv[at + 1] == "4", cmdline.fileName().toUtf8().constData());
    QCOMPARE(labQuery(lab.path(), "SELECT l.concurrency || ' ' || l.completed || ' ' || l.failed || ' ' || "
                                  "json_extract(l.result_json, '$.total_output_tokens') FROM benchmark_levels l "
                                  "JOIN benchmarks b ON b.id = l.benchmark_id WHERE b.label = 'demo runtime LoRA' "
                                  "ORDER BY l.concurrency"),
             (QStringList{"1 8 0 384", "4 8 0 384"}));
    // The sweep ran bench with the warm-up; the lab records the command.
    QVERIFY(labQuery(lab.path(), "SELECT command FROM benchmarks WHERE label = 'demo runtime LoRA'")
                .value(0)
                .contains(" --warmup 4"));
    // The server's own count, from its /metrics read before the first request and after the
    // sweep, beside the client's: the client's 768 and the warm-up's 4 x 48 = 960 at the server,
    // which the label says; its decode steps ran 1 to 4 rows (levels 1 and 4).
    auto* server = panel->findChild<QLabel*>("serverLabel");
    QVERIFY(server);
    QVERIFY(waitUntil([&] { return server->text().startsWith("Server, over the sweep: "); },
                      "the server's reading after the sweep"));
    QVERIFY2(server->text().contains("960 tokens generated (the client counted 768)") &&
                 server->text().endsWith(" (the server's count includes the 4 warm-up requests; the client's does not)"),
             qPrintable(server->text()));
    const auto steps = QRegularExpression(R"(decode steps of ([0-9.]+) rows, [0-9.]+ ms each; now 0 running, 0 waiting \()")
                           .match(server->text());
    QVERIFY2(steps.hasMatch() && steps.captured(1).toDouble() >= 1.0 && steps.captured(1).toDouble() <= 4.0,
             qPrintable(server->text()));
    // Each level's own server reading, recorded with the sweep (bench read it after the warm-up),
    // in its cell's tooltip: 384 by both counts.
    auto* table = waitFor<QTableView>(panel, "resultsTable");
    int c4 = -1;
    for (int c = 0; c < results->columnCount(); ++c)
      if (results->headerData(c, Qt::Horizontal).toString() == "c=4 tok/s") c4 = c;
    QVERIFY(c4 >= 0);
    const QModelIndex c4Cell = results->index(before, c4);
    table->scrollTo(c4Cell);
    const QRect rect = table->visualRect(c4Cell);
    QHelpEvent hover(QEvent::ToolTip, rect.center(), table->viewport()->mapToGlobal(rect.center()));
    QCoreApplication::sendEvent(table->viewport(), &hover);
    QVERIFY(QToolTip::isVisible());
    // (On a busy machine the level may also carry a collapse diagnosis, on the line above.)
    QVERIFY2(QToolTip::text().split('\n').last().startsWith(
                 "The server counted 384 tokens generated (the client 384); decode steps of "),
             qPrintable(QToolTip::text()));
    QToolTip::hideText();

    // A sweep against a model the server does not serve: HTTP 404, recorded as failed.
    const QString serverUrl = panel->server()->baseUrl();
    QVERIFY(chooseInCombo(panel->findChild<QComboBox*>("endpointKind"), "URL"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "url"), serverUrl));
    QVERIFY(typeInto(model, "no-such-adapter"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "label"), "wrong model"));
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("runButton")));
    QVERIFY(waitUntil([&] { return finished.count() == 2; }, "the failing sweep to end", kTrainWaitMs));
    QVERIFY(finished.last().first().toInt() != 0);
    // The warm-up (still 4) is where it failed, and the status says so.
    QVERIFY2(panel->status().startsWith("Sweep failed: crosslab-cli bench: warm-up: every request failed: HTTP 404"),
             qPrintable(panel->status()));
    QCOMPARE(panel->findChild<QLabel*>("levelLabel")->text(), QString("failed"));
    // Every request was refused: the server generated nothing, and says so.
    QVERIFY(waitUntil([&] { return server->text().startsWith("Server, over the sweep: "); },
                      "the server's reading after the failed sweep"));
    QVERIFY2(server->text().startsWith("Server, over the sweep: 0 tokens generated (the client counted 0)"),
             qPrintable(server->text()));
    QVERIFY(!progress->isTextVisible());  // no percentage of a sweep that measured nothing
    const int wrong = before + 1;
    QVERIFY(waitUntil([&] { return results->rowCount() == wrong + 1; }, "the failed sweep's row"));
    QCOMPARE(results->data(results->index(wrong, 0)).toString(), QString("wrong model"));
    QCOMPARE(results->data(results->index(wrong, 1)).toString(), QString("failed"));
    const QString notes = results->data(results->index(wrong, results->columnCount() - 1)).toString();
    QVERIFY2(notes.contains("404"), qPrintable(notes));
    for (int c = 2; c < results->columnCount() - 1; ++c)
      QVERIFY2(results->data(results->index(wrong, c)).toString().isEmpty(),
               qPrintable(QString("failed sweep shows a figure in column %1: %2").arg(c).arg(results->data(results->index(wrong, c)).toString())));

    // CSV through the real save dialog: every figure cell is a number (or empty).
    const QString csv = lab.file("bench.csv");
    DialogDriver save("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, csv); });
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("exportCsv")));
    QVERIFY2(save.wait(), qPrintable(save.error()));
    QVERIFY(waitUntil([&] { return QFile::exists(csv); }, "the CSV file"));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + wrong + 1);
    // A column per concurrency any sweep in the lab measured (the demo's 1, 4 and 16, unless its
    // own sweep stopped early on a loaded machine; ours 1 and 4), then the summary.
    QStringList levelColumns;
    for (const QString& c :
         labQuery(lab.path(), "SELECT DISTINCT concurrency FROM benchmark_levels ORDER BY concurrency"))
      levelColumns << QString("c=%1 tok/s").arg(c);
    QVERIFY2(levelColumns.contains("c=1 tok/s") && levelColumns.contains("c=4 tok/s"),
             qPrintable(levelColumns.join(',')));
    QCOMPARE(lines[0], QString("Venue / method,Status,1-stream tok/s,%1,Best aggregate tok/s,"
                               "Best at concurrency,$/M output,Collapse,Error").arg(levelColumns.join(',')));
    const QStringList header = lines[0].split(',');
    const QStringList done = lines[1 + before].split(',');
    QCOMPARE(done.size(), header.size());
    QCOMPARE(done[0], QString("demo runtime LoRA"));
    QCOMPARE(done[1], QString("done"));
    for (const QString column : {"c=1 tok/s", "c=4 tok/s", "Best aggregate tok/s", "Best at concurrency"}) {
      const QString cell = done[header.indexOf(column)];
      bool ok = false;
      cell.toDouble(&ok);
      QVERIFY2(ok, qPrintable(QString("CSV cell %1 '%2' is not a number").arg(column, cell)));
    }
    // The 1-stream figure is the lab's: a number, or (on a machine so busy that the client read
    // every level-1 reply in one piece, the lab's NULL) empty, as the table's "not measured".
    const QString oneStream = done[header.indexOf("1-stream tok/s")];
    const QString labOneStream = labQuery(lab.path(), "SELECT ifnull(l.per_stream_tok_s, 'NULL') FROM benchmark_levels l "
                                                      "JOIN benchmarks b ON b.id = l.benchmark_id "
                                                      "WHERE b.label = 'demo runtime LoRA' AND l.concurrency = 1")
                                     .value(0);
    if (labOneStream == "NULL") {
      QVERIFY2(oneStream.isEmpty(), qPrintable(oneStream));
      QCOMPARE(results->data(results->index(before, 2)).toString(), QString("not measured"));
    } else {
      bool ok = false;
      const double v = oneStream.toDouble(&ok);
      QVERIFY2(ok && v > 0 && qAbs(v - labOneStream.toDouble()) <= 0.05 + 1e-9,
               qPrintable(QString("CSV 1-stream '%1', the lab %2").arg(oneStream, labOneStream)));
    }
    QVERIFY(done[header.indexOf("c=16 tok/s")].isEmpty());  // not measured by this sweep
    QVERIFY(lines[1 + wrong].startsWith("wrong model,failed,,,,,,,"));

    // Stop server (the child is gone); then a new lab: no stale adapter name in Model.
    const qint64 pid = panel->server()->processId();
    QVERIFY(alive(pid));
    QVERIFY(chooseInCombo(panel->findChild<QComboBox*>("endpointKind"), "Local server (crosslab-cli serve)"));
    QSignalSpy stopped(panel->server(), &backends::LocalServeProcess::stopped);
    QVERIFY(scrollAndClick(scroll, stopServer));
    QVERIFY(stopped.wait(kWaitMs));
    QVERIFY(waitUntil([&] { return !alive(pid); }, "the server child to be gone"));
    QVERIFY(typeInto(model, ""));
    QVERIFY(toggleItem(adapters, 0));  // unticked
    QVERIFY(toggleItem(adapters, 0));  // ticked again: the field follows
    QCOMPARE(model->text(), QString("demo-lora"));
    const QString fresh = lab.file("fresh-lab");
    QVERIFY(newLabFromMenu(window.get(), fresh));
    QVERIFY(waitUntil([&] { return window->session()->path() == fresh; }, "the new lab to be open"));
    QCOMPARE(model->text(), QString());
    QCOMPARE(adapters->count(), 0);
    QCOMPARE(panel->results()->rowCount(), 0);
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();

    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QStringList failed = labQuery(lab.path(),
                                  "SELECT status || ' | ' || error || ' | ' || (SELECT count(*) FROM benchmark_levels "
                                  "WHERE benchmark_id = b.id) FROM benchmarks b WHERE label = 'wrong model'");
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed[0].startsWith("failed | ") && failed[0].contains("404") && failed[0].endsWith(" | 0"),
             qPrintable(failed[0]));  // no 0.0 tok/s "measurement"
  }

 private:
  // Drives a sweep against `cfg`'s stand-in through the Benchmarks panel's widgets (endpoint
  // "URL", typed URL and model, levels, prompts, output length, label, a click on Run), keeps
  // the status line as each level's result arrives, the level label and the results table's row
  // for the sweep (header → cell text) at the end, and quits through the Lab menu. Check
  // QTest::currentTestFailed() after it.
  struct PanelSweep {
    QStringList statuses;
    QString levelLabel;
    QMap<QString, QString> row;
  };
  void sweepThroughPanel(const QString& labPath, const backends::StandinConfig& cfg, const QString& levels,
                         int numPrompts, int outputLen, const QString& label, PanelSweep& out) {
    backends::StandinServer standin(cfg);
    standin.start();
    auto window = std::make_unique<widgets::MainWindow>();
    auto* panel = openBenchmarks(window.get(), labPath);
    QVERIFY(panel);
    auto* scroll = panel->findChild<QScrollArea*>();
    QVERIFY(chooseInCombo(waitFor<QComboBox>(panel, "endpointKind"), "URL"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "url"), QString::fromStdString(standin.baseUrl())));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "model"), "standin"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "levels"), levels));
    QVERIFY(typeIntoSpin(panel->findChild<QSpinBox*>("numPrompts"), numPrompts));
    QVERIFY(typeIntoSpin(panel->findChild<QSpinBox*>("outputLen"), outputLen));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "label"), label));
    // The status line as each level's result arrives (read right after the panel set it).
    auto* status = panel->findChild<QLabel*>("statusLabel");
    QVERIFY(status);
    connect(panel->process(), &backends::BenchProcess::levelDone, this, [&] { out.statuses << status->text(); });
    QSignalSpy finished(panel, &widgets::BenchmarksPanel::sweepFinished);
    // The demo lab opened on its sweeps compared; a sweep that starts is watched live.
    auto* tabs = waitFor<QTabWidget>(panel, "chartTabs");
    QVERIFY(tabs);
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(panel->findChild<QChartView*>("compareChart")));
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("runButton")));
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(panel->liveChart()));
    QVERIFY(waitUntil([&] { return finished.count() == 1; }, "the sweep to finish", kTrainWaitMs));
    QCOMPARE(finished.last().first().toInt(), 0);
    QVERIFY2(panel->status().startsWith("Sweep done"), qPrintable(panel->status()));
    out.levelLabel = panel->findChild<QLabel*>("levelLabel")->text();
    auto* table = waitFor<QTableView>(panel, "resultsTable");
    QVERIFY(table);
    const auto* model = table->model();
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->index(r, 0).data().toString() == label)
        for (int c = 0; c < model->columnCount(); ++c)
          out.row[model->headerData(c, Qt::Horizontal).toString()] = model->index(r, c).data().toString();
    QVERIFY2(!out.row.isEmpty(), qPrintable(label + " is not in the results table"));
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
  }

 private slots:
  // A sweep whose later levels' replies each come in one read (the stand-in writes them whole,
  // as a client given no CPU reads them): the status says the per-stream rate was not measured,
  // the sweep runs every level instead of stopping on a "collapse", and the lab holds NULL, not 0.
  void aLevelReadAtOnceIsNotMeasured() {
    DemoLab lab;
    QVERIFY(lab.ok());
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.wholeRepliesAfter = 4;  // the four requests at concurrency 1 are paced
    PanelSweep sweep;
    sweepThroughPanel(lab.path(), cfg, "1,2,4", 4, 16, "replies read at once", sweep);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(sweep.levelLabel, QString("done: 3 levels"));
    QCOMPARE(sweep.statuses.size(), 3);
    QVERIFY2(sweep.statuses[0].contains("tok/s per stream"), qPrintable(sweep.statuses[0]));
    for (int i : {1, 2})
      QVERIFY2(sweep.statuses[i].contains("per stream not measured") && !sweep.statuses[i].contains("collapse"),
               qPrintable(sweep.statuses[i]));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(labQuery(lab.path(), "SELECT l.concurrency || ' ' || (l.per_stream_tok_s IS NULL) || ' ' || "
                                  "(l.collapse IS NULL) FROM benchmark_levels l JOIN benchmarks b ON b.id = "
                                  "l.benchmark_id WHERE b.label = 'replies read at once' ORDER BY l.concurrency"),
             (QStringList{"1 0 1", "2 1 1", "4 1 1"}));
  }

  // A saturated engine (the stand-in shares two streams' pace among all of them): at c=64 each
  // stream gets a thirty-second of one stream's rate, but together they decode twice as much, so
  // the sweep runs every level and nothing is called a collapse (the rule before stopped there).
  void aSaturatedEngineRunsEveryLevel() {
    DemoLab lab;
    QVERIFY(lab.ok());
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.fullPaceStreams = 2;
    PanelSweep sweep;
    sweepThroughPanel(lab.path(), cfg, "1,4,64", 64, 50, "saturated", sweep);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(sweep.levelLabel, QString("done: 3 levels"));
    QCOMPARE(sweep.statuses.size(), 3);
    for (const auto& s : sweep.statuses)
      QVERIFY2(s.contains("tok/s per stream") && !s.contains("collapse"), qPrintable(s));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    // Each level: no collapse, and per stream / together as a share of one stream's rate.
    const auto rows = labQuery(
        lab.path(), "SELECT l.concurrency || ' ' || (l.collapse IS NULL) || ' ' || (l.per_stream_tok_s / "
                    "o.per_stream_tok_s) || ' ' || (l.per_stream_tok_s * l.concurrency / o.per_stream_tok_s) "
                    "FROM benchmark_levels l JOIN benchmarks b ON b.id = l.benchmark_id JOIN benchmark_levels o "
                    "ON o.benchmark_id = b.id AND o.concurrency = 1 WHERE b.label = 'saturated' ORDER BY l.concurrency");
    QCOMPARE(rows.size(), 3);
    QStringList flags;
    for (const auto& r : rows) flags << r.section(' ', 0, 1);
    QCOMPARE(flags, (QStringList{"1 1", "4 1", "64 1"}));
    // At 64: per stream under a tenth of one stream's, together above it — saturation, as set up.
    QVERIFY2(rows[2].section(' ', 2, 2).toDouble() < 0.1 && rows[2].section(' ', 3, 3).toDouble() > 1,
             qPrintable(rows[2]));
  }

  // The demo lab opens with its sweeps compared (issue 14: "the Benchmarks panel opens with rows,
  // charts and a comparison"): the "Compare rows" tab shows a bar set per recorded sweep, the
  // table's figures, under the axis' top. A click on a row compares that row alone; the choice
  // survives a sweep recorded from the shell (`crosslab-cli bench --lab`, beside the window),
  // which joins it (before, every reload of the table dropped the selection and emptied the
  // chart). The Live sweep tab, clicked, shows the live chart; a row clicked, the comparison.
  void theDemoLabOpensWithItsSweepsCompared() {
    DemoLab lab;
    QVERIFY(lab.ok());
    const QStringList recorded = labQuery(lab.path(), "SELECT label FROM benchmarks b WHERE EXISTS (SELECT 1 FROM "
                                                      "benchmark_levels l WHERE l.benchmark_id = b.id AND "
                                                      "l.completed > 0) ORDER BY id");
    QCOMPARE(recorded.size(), 2);  // the demo's merged and runtime LoRA sweeps
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    backends::StandinServer standin(cfg);
    standin.start();
    auto window = std::make_unique<widgets::MainWindow>();
    auto* panel = openBenchmarks(window.get(), lab.path());
    QVERIFY(panel);
    auto* tabs = waitFor<QTabWidget>(panel, "chartTabs");
    auto* compare = waitFor<QChartView>(panel, "compareChart");
    auto* table = waitFor<QTableView>(panel, "resultsTable");
    QVERIFY(tabs && compare && table);
    QVERIFY(waitUntil([&] { return tabs->currentWidget() == compare && !compare->viewport()->visibleRegion().isEmpty(); },
                      "the comparison to be shown"));
    QCOMPARE(barLabels(compare), recorded);
    // Each bar is the table's figure at its level (a cell may add "(collapse)"; a level the quick
    // sweep did not reach, after a collapse on a busy machine, has neither), and the axis holds
    // the tallest.
    const auto* model = table->model();
    QStringList levelColumns;
    for (int c = 0; c < model->columnCount(); ++c)
      if (model->headerData(c, Qt::Horizontal).toString().startsWith("c=")) levelColumns << QString::number(c);
    // A column per level the lab holds: c=1, c=4 and c=16, less c=16 when both quick sweeps
    // stopped at a collapse on a busy machine (seen once at ctest -j2).
    const QStringList levels = labQuery(lab.path(), "SELECT DISTINCT concurrency FROM benchmark_levels ORDER BY 1");
    QVERIFY2(levels.size() >= 2 && levels[0] == "1" && levels[1] == "4", qPrintable(levels.join(',')));
    QCOMPARE(levelColumns.size(), levels.size());
    qreal tallest = 0;
    const auto sets = barSets(compare);
    for (int r = 0; r < sets.size(); ++r) {
      QCOMPARE(sets[r].second.size(), levelColumns.size());
      for (int i = 0; i < levelColumns.size(); ++i) {
        const QString cell = model->index(r, levelColumns[i].toInt()).data().toString();
        const QString figure = cell.section(' ', 0, 0);
        if (figure.isEmpty() || figure == "collapse") {  // a level the sweep did not reach or finish: no bar
          QCOMPARE(sets[r].second[i], 0.0);
          continue;
        }
        QCOMPARE(QString::number(sets[r].second[i], 'f', 1), figure);
        tallest = std::max(tallest, sets[r].second[i]);
      }
    }
    QVERIFY(tallest > 0);
    const auto axes = compare->chart()->axes(Qt::Vertical);
    QCOMPARE(axes.size(), 1);
    auto* y = qobject_cast<QValueAxis*>(axes.first());
    QVERIFY(y && y->min() == 0 && y->max() >= tallest && y->max() <= 2 * tallest);

    // The table's two rates differ (1-stream above c=1 here): their headers' tooltips say why.
    auto* header = table->horizontalHeader();
    const auto headerTip = [&](const QString& title) {
      for (int c = 0; c < model->columnCount(); ++c)
        if (model->headerData(c, Qt::Horizontal).toString() == title) {
          const QPoint at(header->sectionViewportPosition(c) + header->sectionSize(c) / 2, header->height() / 2);
          QHelpEvent hover(QEvent::ToolTip, at, header->viewport()->mapToGlobal(at));
          QCoreApplication::sendEvent(header->viewport(), &hover);
          return QToolTip::isVisible() ? QToolTip::text() : QString();
        }
      return QString();
    };
    QVERIFY2(headerTip("1-stream tok/s").contains("time to first token left out"), qPrintable(headerTip("1-stream tok/s")));
    QVERIFY2(headerTip("c=1 tok/s").contains("time to first token and the gaps between requests in"),
             qPrintable(headerTip("c=1 tok/s")));
    QToolTip::hideText();

    QVERIFY(clickRow(table, 0));
    QVERIFY(waitUntil([&] { return barLabels(compare) == QStringList{recorded[0]}; }, "the clicked row alone compared"));
    // A sweep from the shell, into the open lab: the window lists it and compares it too.
    const auto shell = runCliBesideWindow({"bench", "--url", QString::fromStdString(standin.baseUrl()), "--model",
                                           "standin", "--concurrency", "1,2", "--num-prompts", "4", "--output-len",
                                           "16", "--label", "from the shell", "--lab", lab.path()});
    QVERIFY2(shell.code == 0, shell.err.constData());
    QVERIFY(waitUntil([&] { return model->rowCount() == 3; }, "the shell's sweep in the table"));
    QVERIFY(waitUntil([&] { return barLabels(compare) == QStringList{recorded[0], "from the shell"}; },
                      "the clicked row and the new sweep compared"));
    QCOMPARE(table->selectionModel()->selectedRows().size(), 2);

    auto* tabBar = tabs->findChild<QTabBar*>();
    QVERIFY(tabBar);
    QTest::mouseClick(tabBar, Qt::LeftButton, {}, tabBar->tabRect(0).center());
    QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(panel->liveChart()));
    QVERIFY(clickRow(table, 1));
    QVERIFY(waitUntil([&] { return tabs->currentWidget() == compare && barLabels(compare) == QStringList{recorded[1]}; },
                      "the second row compared, on the comparison tab"));
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();

    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(labQuery(lab.path(), "SELECT b.status || ' ' || count(l.concurrency) FROM benchmarks b JOIN "
                                  "benchmark_levels l ON l.benchmark_id = b.id WHERE b.label = 'from the shell' "
                                  "GROUP BY b.id"),
             QStringList{"done 2"});
  }

  // A warm-up the server never answers: while it runs the panel says so, with a busy bar (bench
  // reports nothing before its first level); what the user types after clicking Run, before the
  // panel has heard back from the server's /metrics, is for the next sweep, not this one; Stop
  // ends the sweep in its warm-up, and the lab keeps it, with no level measured.
  void aWarmUpShowsAndStops() {
    DemoLab lab;
    QVERIFY(lab.ok());
    backends::StandinConfig cfg;
    cfg.faults = {{backends::StandinFault::Kind::NeverAnswer}};
    backends::StandinServer standin(cfg);
    standin.start();
    auto window = std::make_unique<widgets::MainWindow>();
    auto* panel = openBenchmarks(window.get(), lab.path());
    QVERIFY(panel);
    auto* scroll = panel->findChild<QScrollArea*>();
    QVERIFY(chooseInCombo(waitFor<QComboBox>(panel, "endpointKind"), "URL"));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "url"), QString::fromStdString(standin.baseUrl())));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "model"), "standin"));
    auto* levels = waitFor<QLineEdit>(panel, "levels");
    QVERIFY(typeInto(levels, "1,2"));
    auto* warmup = panel->findChild<QSpinBox*>("warmup");
    QVERIFY(typeIntoSpin(warmup, 3));
    QVERIFY(typeInto(waitFor<QLineEdit>(panel, "label"), "never warmed"));
    QSignalSpy finished(panel, &widgets::BenchmarksPanel::sweepFinished);
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("runButton")));
    QVERIFY(typeInto(levels, "8"));
    QVERIFY(typeIntoSpin(warmup, 0));
    auto* levelLabel = panel->findChild<QLabel*>("levelLabel");
    auto* progress = panel->findChild<QProgressBar*>("progress");
    QVERIFY(waitUntil([&] { return levelLabel->text() == "warming up: 3 requests, not measured…"; },
                      "the panel to say it is warming up"));
    QCOMPARE(progress->minimum(), 0);
    QCOMPARE(progress->maximum(), 0);  // busy: no share of the sweep is done
    QVERIFY(!panel->findChild<QPushButton*>("runButton")->isEnabled());
    // The sweep that runs is the one clicked: its row in the lab (bench writes it as it starts).
    QVERIFY(waitUntil([&] { return !labQuery(lab.path(), "SELECT command FROM benchmarks WHERE label = 'never warmed'")
                                        .isEmpty(); },
                      "the sweep's row in the lab"));
    const QString command = labQuery(lab.path(), "SELECT command FROM benchmarks WHERE label = 'never warmed'").value(0);
    QVERIFY2(command.contains(" --concurrency 1,2 ") && command.contains(" --warmup 3"), qPrintable(command));
    QVERIFY(scrollAndClick(scroll, panel->findChild<QPushButton*>("stopButton")));
    QVERIFY(waitUntil([&] { return finished.count() == 1; }, "the sweep to stop"));
    QCOMPARE(panel->status(), QString("Stopped during the warm-up; nothing was measured."));
    QVERIFY2(!levelLabel->text().startsWith("warming up"), qPrintable(levelLabel->text()));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    // Stopped, not failed (its warm-up requests were cut off by the stop, not refused).
    QCOMPARE(labQuery(lab.path(), "SELECT status || ' ' || (SELECT count(*) FROM benchmark_levels WHERE benchmark_id "
                                  "= b.id) || ' ' || error FROM benchmarks b WHERE label = 'never warmed'"),
             QStringList{"stopped 0 stopped by the user during the warm-up"});
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
  }

  // A level the live check stops (the stand-in slows every stream to 5 tok/s past one stream)
  // completes nothing: the table says "collapse" in its cell, not a rate of 0.0, and the best
  // aggregate stays at c=1; the lab keeps the level for its collapse with nothing completed.
  void aLevelStoppedLiveShowsCollapseNotARate() {
    DemoLab lab;
    QVERIFY(lab.ok());
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.collapseAboveStreams = 1;
    PanelSweep sweep;
    sweepThroughPanel(lab.path(), cfg, "1,4", 4, 200, "stopped live", sweep);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(sweep.statuses.size(), 2);
    QVERIFY2(sweep.statuses[1].contains("decode collapse: per-stream") &&
                 sweep.statuses[1].contains("over the last"), qPrintable(sweep.statuses[1]));
    QCOMPARE(sweep.row.value("c=4 tok/s"), QString("collapse"));
    QVERIFY2(sweep.row.value("Best aggregate").endsWith("(c=1)"), qPrintable(sweep.row.value("Best aggregate")));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QCOMPARE(labQuery(lab.path(), "SELECT l.concurrency || ' ' || l.completed || ' ' || (l.collapse IS NOT NULL) FROM "
                                  "benchmark_levels l JOIN benchmarks b ON b.id = l.benchmark_id WHERE b.label = "
                                  "'stopped live' ORDER BY l.concurrency"),
             (QStringList{"1 4 0", "4 0 1"}));
  }
};

QTEST_MAIN(TestJourneyBenchmarkAnAdapter)
#include "test_journey_benchmark_an_adapter.moc"
