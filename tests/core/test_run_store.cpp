// RunStore, the one owner of a run's status: the transition table, all-or-nothing
// requests, a name or folder never taken twice, lookups by id/folder/name, and the
// metrics sequence that an eval loss folded into an old step also advances.
#include <QTemporaryDir>
#include <QtTest>

#include "core/store/lab_store.h"
#include "core/store/run_store.h"

using namespace crosslab;
using store::LabStore;
using store::MetricRow;
using train::RunStatus;

namespace {
train::StepRecord step(std::int64_t n, std::optional<double> loss, std::optional<double> evalLoss = std::nullopt) {
  train::StepRecord r;
  r.step = n;
  r.loss = loss;
  r.evalLoss = evalLoss;
  r.lr = loss ? std::optional<double>(1e-4) : std::nullopt;
  return r;
}
store::NewRun newRun(const std::string& name, const std::string& dir) {
  store::NewRun r;
  r.name = name;
  r.model = "m";
  r.totalSteps = 3;
  r.runDir = dir;
  return r;
}
}  // namespace

class TestRunStore : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int n_ = 0;
  LabStore lab() { return LabStore::create(tmp_.filePath(QString("lab%1").arg(++n_)).toStdString(), "t"); }

 private slots:
  void transitionTable() {
    using train::transitionAllowed;
    QVERIFY(transitionAllowed(RunStatus::Pending, RunStatus::Running));
    QVERIFY(transitionAllowed(RunStatus::Running, RunStatus::Stalled));
    QVERIFY(transitionAllowed(RunStatus::Stalled, RunStatus::Running));
    QVERIFY(transitionAllowed(RunStatus::Failed, RunStatus::Pending));  // resume
    QVERIFY(!transitionAllowed(RunStatus::Finished, RunStatus::Failed));
    QVERIFY(!transitionAllowed(RunStatus::Stopped, RunStatus::Finished));
    QVERIFY(!transitionAllowed(RunStatus::Failed, RunStatus::Running));
    QVERIFY(!transitionAllowed(RunStatus::Running, RunStatus::Running));
    for (auto s : {RunStatus::Pending, RunStatus::Running, RunStatus::Stalled, RunStatus::Finished, RunStatus::Failed,
                   RunStatus::Stopped})
      QCOMPARE(*train::runStatusFromString(train::toString(s)), s);
    QVERIFY(!train::runStatusFromString("exploded"));
  }

  void requestsAreAllOrNothing() {
    auto l = lab();
    auto runs = l.runs();
    const auto id = runs.requestCreate(newRun("r", "/labs/x/runs/r"));
    QCOMPARE(runs.byId(id)->state, RunStatus::Pending);
    QVERIFY(runs.byId(id)->startedAt.empty());
    QVERIFY(runs.requestStatus(id, RunStatus::Running));
    QVERIFY(!runs.byId(id)->startedAt.empty());
    QVERIFY(runs.requestStatus(id, RunStatus::Finished, "finished"));
    QVERIFY(!runs.byId(id)->endedAt.empty());
    // A late watchdog cannot turn a finished run into a failed one: refused, nothing changed.
    QVERIFY(!runs.requestStatus(id, RunStatus::Failed, "process gone"));
    const auto row = *runs.byId(id);
    QCOMPARE(row.state, RunStatus::Finished);
    QCOMPARE(row.statusReason, std::string("finished"));
    QVERIFY_THROWS_EXCEPTION(store::StoreError, runs.requestStatus(999, RunStatus::Running));
  }

  void stoppedAndResumed() {
    auto l = lab();
    auto runs = l.runs();
    const auto id = runs.requestCreate(newRun("r", "/d"));
    QVERIFY(runs.requestStatus(id, RunStatus::Running));
    QVERIFY(runs.requestStatus(id, RunStatus::Stopped, "stopped from the window"));
    QVERIFY(!runs.requestStatus(id, RunStatus::Finished));  // the end event of a stop is no finish
    QVERIFY(runs.requestStatus(id, RunStatus::Pending, "resuming"));
    QVERIFY(runs.byId(id)->endedAt.empty());
    QVERIFY(runs.requestStatus(id, RunStatus::Running));
  }

  void watchdogSharpensOnlyItsOwnReason() {
    auto l = lab();
    auto runs = l.runs();
    const auto id = runs.requestCreate(newRun("r", "/d"));
    QVERIFY(runs.requestStatus(id, RunStatus::Running));
    QVERIFY(runs.requestStatus(id, RunStatus::Failed, "Python traceback"));
    QVERIFY(runs.requestReason(id, RunStatus::Failed, "Python traceback", "Python traceback: KeyError: 'x'"));
    QVERIFY(!runs.requestReason(id, RunStatus::Failed, "Python traceback", "something else"));
    QCOMPARE(runs.byId(id)->statusReason, std::string("Python traceback: KeyError: 'x'"));
  }

  void nameAndFolderAreNeverTakenTwice() {
    auto l = lab();
    auto runs = l.runs();
    runs.requestCreate(newRun("lora-1", "/labs/x/runs/lora-1"));
    QVERIFY_THROWS_EXCEPTION(store::RunConflict, runs.requestCreate(newRun("lora-1", "/other")));
    QVERIFY_THROWS_EXCEPTION(store::RunConflict,
                             runs.requestCreate(newRun("lora-2", "/labs/x/runs/lora-1")));
    QCOMPARE(runs.list().size(), size_t(1));
    QCOMPARE(runs.byDir("/labs/x/runs/lora-1")->name, std::string("lora-1"));
    QCOMPARE(runs.byName("lora-1")->runDir, std::string("/labs/x/runs/lora-1"));
    QVERIFY(!runs.byDir("/nowhere"));
  }

  // The chart reads by seq: an eval loss that lands in step 2's row after step 3 was read
  // comes back, merged with step 2's loss, and nothing is skipped or doubled.
  void evalLossAdvancesTheSequence() {
    auto l = lab();
    auto runs = l.runs();
    const auto id = runs.requestCreate(newRun("r", "/d"));
    runs.appendSteps(id, {step(1, 1.0), step(2, 0.9), step(3, 0.8)});
    auto rows = runs.metricsSince(id, -1);
    QCOMPARE(rows.size(), size_t(3));
    const std::int64_t seen = rows.back().seq;
    QVERIFY(runs.metricsSince(id, seen).empty());
    runs.appendSteps(id, {step(2, std::nullopt, 0.95)});  // the eval line of step 2, later
    rows = runs.metricsSince(id, seen);
    QCOMPARE(rows.size(), size_t(1));
    QCOMPARE(rows[0].step, std::int64_t(2));
    QCOMPARE(*rows[0].evalLoss, 0.95);
    QCOMPARE(*rows[0].loss, 0.9);  // merged, not replaced
    QVERIFY(rows[0].seq > seen);
    // A resumed run writes step 3 again: one row, the new loss.
    runs.appendSteps(id, {step(3, 0.7)});
    QCOMPARE(runs.metricsSince(id, -1).size(), size_t(3));
    QCOMPARE(*runs.metricsSince(id, -1).back().loss, 0.7);
    QCOMPARE(*runs.byId(id)->lastLoss, 0.7);
  }

  // A schema-3 lab (metrics rows without seq) migrates; its old rows read as seq 0.
  void oldRowsReadFromTheStart() {
    auto l = lab();
    auto runs = l.runs();
    const auto id = runs.requestCreate(newRun("r", "/d"));
    l.db().exec("INSERT INTO metrics(run_id, step, loss) VALUES (" + std::to_string(id) + ", 1, 0.5)");
    QCOMPARE(runs.metricsSince(id, -1).size(), size_t(1));
    runs.appendSteps(id, {step(2, 0.4)});
    QCOMPARE(runs.metricsSince(id, 0).size(), size_t(1));
  }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"
