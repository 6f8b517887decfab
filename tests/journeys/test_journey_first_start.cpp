// Journey: the first start. Nobody has a lab yet; the window builds the demo lab with the
// real `crosslab-cli demo --quick` child and teaches while it does: each stage is a
// determinate bar above the panels (tokenizer, pretraining n/N, LoRA n/N, evals n/60),
// nothing is modal, the lab opens as soon as it exists, and the demo's LoRA run is on the
// Training panel — running, its curve growing — while it trains.
//
// To look at the window mid-LoRA without racing the child, the test lets the child run in
// short slices (SIGCONT … SIGSTOP) until the lab's store holds the LoRA run running with a
// logged step, then keeps it stopped while it checks what the window shows.
#include <QAbstractItemModel>
#include <QApplication>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QProcess>
#include <QProgressBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <csignal>
#include <map>
#include <optional>

#include "backends/lab_session.h"
#include "tests/journeys/journey_support.h"
#include "widgets/demo_progress_view.h"
#include "widgets/loss_chart.h"
#include "widgets/main_window.h"
#include "widgets/training_panel.h"

using crosslab::widgets::MainWindow;

namespace {

struct LoraRow {
  qint64 id = 0;
  QString status;
  qint64 steps = 0, total = 0;
};

// The demo's LoRA run as the store has it now (read-only; nothing while the lab is not there yet).
// Read in this process, through the same SQLite library as the window's, because the check
// runs between 20 ms slices of the child; the final checks go through a separate process.
std::optional<LoraRow> loraInStore(const QString& dir) {
  sqlite3* db = nullptr;
  std::optional<LoraRow> out;
  const QByteArray file = (dir + "/lab.sqlite").toUtf8();
  if (sqlite3_open_v2(file.constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    const char* sql =
        "SELECT r.id, r.status, (SELECT count(*) FROM metrics m WHERE m.run_id = r.id), coalesce(r.total_steps, 0) "
        "FROM runs r WHERE r.run_dir LIKE '%demo-lora' ORDER BY r.id DESC LIMIT 1";
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      out = LoraRow{sqlite3_column_int64(st, 0), QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 1))),
                    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

int column(const QAbstractItemModel* m, const QString& header) {
  for (int c = 0; c < m->columnCount(); ++c)
    if (m->headerData(c, Qt::Horizontal).toString() == header) return c;
  return -1;
}

// The text of the table row whose Name contains `name`, in the column headed `header`.
QString cell(const QTableView* table, const QString& name, const QString& header) {
  const auto* m = table->model();
  const int nameCol = column(m, "Name"), col = column(m, header);
  if (nameCol < 0 || col < 0) return {};
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, nameCol).data().toString().contains(name)) return m->index(r, col).data().toString();
  return {};
}

}  // namespace

class TestJourneyFirstStart : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    crosslab::journey::initJourneyProgram();
    QVERIFY(tmp_.isValid());
  }

  void firstStartShowsTheLabBeingBuilt() {
    const QString dir = tmp_.filePath("home/demo");
    MainWindow w;
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.buildDemoLab(dir, true);  // what the app does on a first start (app/gui_main.cpp)

    auto* view = w.findChild<crosslab::widgets::DemoProgressView*>("demoProgress");
    QVERIFY(view);
    QTRY_VERIFY(view->isVisible());
    QVERIFY2(!QApplication::activeModalWidget(), "the first start must not block the window");
    QProgressBar* bars[4];
    std::map<int, std::pair<int, int>> best;  // stage -> (highest value, its maximum)
    for (int i = 0; i < 4; ++i) {
      bars[i] = view->findChild<QProgressBar*>(QString("demoStage%1").arg(i));
      QVERIFY(bars[i]);
      QVERIFY2(bars[i]->maximum() > 0, "a busy (0..0) bar: the progress must be determinate");
      connect(bars[i], &QProgressBar::valueChanged, this, [&best, bar = bars[i], i](int v) {
        QVERIFY2(bar->maximum() > 0, "a stage turned indeterminate");
        if (v >= best[i].first) best[i] = {v, bar->maximum()};
      });
    }
    auto* process = w.findChild<QProcess*>("demoProcess");
    QVERIFY(process);
    QTRY_VERIFY_WITH_TIMEOUT(process->processId() > 0, 60000);
    const qint64 pid = process->processId();

    // Run the child in slices until its LoRA run is in the store, running, with a step logged.
    std::optional<LoraRow> frozen;
    QElapsedTimer clock;
    clock.start();
    while (!frozen && clock.elapsed() < 600000) {
      QTest::qWait(20);
      if (process->state() == QProcess::NotRunning) break;
      ::kill(pid_t(pid), SIGSTOP);
      const auto lora = loraInStore(dir);
      if (lora && lora->status == "running" && lora->steps >= 1 && lora->steps < lora->total) frozen = lora;
      else ::kill(pid_t(pid), SIGCONT);
    }
    QVERIFY2(frozen, "never saw the demo's LoRA run running in the lab (did the demo fail?)");

    // Mid-LoRA, with the child stopped: the lab is open, the Training panel is on screen with the
    // demo run selected and running, its loss curve has every logged step, and the LoRA bar is
    // determinate and not full.
    QTRY_VERIFY_WITH_TIMEOUT(w.session()->isOpen() && w.session()->path() == QDir(dir).absolutePath(), 60000);
    QCOMPARE(w.currentPanel(), MainWindow::Training);
    auto* training = w.findChild<crosslab::widgets::TrainingPanel*>();
    QVERIFY(training && training->isVisible());
    QTRY_COMPARE_WITH_TIMEOUT(cell(training->table(), "demo-lora", "Status"), QString("running"), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(training->selectedRuns().contains(frozen->id), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(training->chart()->totalLossPoints(frozen->id) == frozen->steps, 60000);
    QVERIFY(cell(training->table(), "demo-lora", "Steps").startsWith(QString::number(frozen->steps) + " / "));
    // (the child may have stopped between logging a step and printing its line)
    QTRY_COMPARE_WITH_TIMEOUT(bars[2]->maximum(), int(frozen->total), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(bars[2]->value() >= frozen->steps - 1, 60000);
    QVERIFY(bars[2]->value() < bars[2]->maximum());
    // Pretraining is over and said so in full.
    QCOMPARE(bars[1]->value(), bars[1]->maximum());
    QVERIFY(bars[1]->maximum() > 1);
    QVERIFY(!QApplication::activeModalWidget());

    ::kill(pid_t(pid), SIGCONT);
    QTRY_VERIFY_WITH_TIMEOUT(!w.findChild<crosslab::widgets::DemoProgressView*>("demoProgress"), 600000);
    if (auto* box = w.findChild<QMessageBox*>("errorDialog")) QFAIL(qPrintable("the demo reported: " + box->text()));

    // Every stage counted to its end: 3 parts of the tokenizer stage, every pretraining step,
    // every LoRA step, both models' answers to the 30 questions.
    QCOMPARE(best[0], std::make_pair(3, 3));
    QVERIFY(best[1].first == best[1].second && best[1].second > 1);
    QCOMPARE(best[2], std::make_pair(int(frozen->total), int(frozen->total)));
    QCOMPARE(best[3], std::make_pair(60, 60));

    // The finished lab, as the window and the store hold it.
    QTRY_COMPARE_WITH_TIMEOUT(cell(training->table(), "demo-lora", "Status"), QString("finished"), 60000);
    const auto done = loraInStore(dir);
    QVERIFY(done && done->status == "finished" && done->steps == done->total);
    QCOMPARE(w.session()->count("samples"), 60);  // 30 answers from the base model, 30 from the LoRA
    QCOMPARE(crosslab::journey::rowCount(dir, "samples"), 60);
    QCOMPARE(crosslab::journey::integrityCheck(dir), QString("ok"));
    QVERIFY2(crosslab::journey::staleLabDescriptors(dir).isEmpty(),
             qPrintable(crosslab::journey::staleLabDescriptors(dir).join("; ")));
  }
};

QTEST_MAIN(TestJourneyFirstStart)
#include "test_journey_first_start.moc"
