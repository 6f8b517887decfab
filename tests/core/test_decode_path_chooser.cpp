// DecodePathChooser: tries each decode path at each batch size, then runs the faster one by
// its best measured step time, and measures them again after kRecheck, 2 kRecheck, 4 kRecheck …
// steps of a size.
#include <QtTest>

#include "core/infer/decode_path_chooser.h"

using crosslab::infer::DecodePath;
using crosslab::infer::DecodePathChooser;

class TestDecodePathChooser : public QObject {
  Q_OBJECT

  // Runs `steps` steps of `rows` rows, fused costing `fused` s and op-by-op `ops` s; returns the op-by-op count.
  static int run(DecodePathChooser& c, int rows, int steps, double fused, double ops) {
    int opSteps = 0;
    for (int i = 0; i < steps; ++i) {
      const DecodePath p = c.pick(rows);
      opSteps += p == DecodePath::OpByOp;
      c.record(rows, p, p == DecodePath::Fused ? fused : ops);
    }
    return opSteps;
  }
  static int perPath() { return DecodePathChooser::kTries * DecodePathChooser::kTurn; }  // steps of one path exploring
  static int exploring(int paths) { return paths * perPath(); }
  // steps of a path whose first timed step takes more than twice another's best: it stops there
  static int abandoned() { return DecodePathChooser::kWarmup + 1; }

 private slots:
  void triesBothThenPicksTheFaster() {
    DecodePathChooser c;
    constexpr int turn = DecodePathChooser::kTurn, warmup = DecodePathChooser::kWarmup;
    // the paths take turns of kTurn steps, the first kWarmup of each untimed (a warm-up's
    // figure never counts, however good or bad short of kHopeless x another path's best: the
    // fused warm-ups are 4x op-by-op's); fused: one slow timed step, then fast ones —
    // the best of the timed steps counts: noise only slows a step
    for (int t = 0; t < DecodePathChooser::kTries; ++t) {
      for (int i = 0; i < turn; ++i) {
        QCOMPARE(c.pick(8), DecodePath::Fused);
        c.record(8, DecodePath::Fused, i < warmup ? 0.030 : t == 0 && i == warmup ? 0.010 : 0.004);
      }
      for (int i = 0; i < turn; ++i) {
        QCOMPARE(c.pick(8), DecodePath::OpByOp);
        c.record(8, DecodePath::OpByOp, i < warmup ? 1e-6 : 0.005 + 0.001 * i);
      }
    }
    for (int i = exploring(2); i + 1 < int(DecodePathChooser::kRecheck); ++i)  // up to the re-check
      QCOMPARE(c.pick(8), DecodePath::Fused);
    QCOMPARE(QString::fromStdString(c.summary()), QString("8:fused"));
  }

  void eachBatchSizeOnItsOwn() {
    DecodePathChooser c;
    QCOMPARE(run(c, 1, 50, 0.001, 0.009), 1);  // 9x at its first warm-up step: hopeless
    QCOMPARE(run(c, 32, 50, 0.020, 0.010), 50 - perPath());
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused 32:op-by-op"));
  }

  // The machine changes (another process, a larger context): the choice follows, by re-measuring.
  void measuresAgainLaterAndLessOften() {
    DecodePathChooser c;
    const int k = int(DecodePathChooser::kRecheck);
    run(c, 4, k - 1, 0.001, 0.002);
    QCOMPARE(QString::fromStdString(c.summary()), QString("4:fused"));
    run(c, 4, exploring(2) + 1, 0.003, 0.002);  // the re-check at step k sees the change
    QCOMPARE(QString::fromStdString(c.summary()), QString("4:op-by-op"));
    // up to step 15k - 1: re-checks at 3k and 7k only (after 2k, then 4k steps), each running
    // fused for its turns
    const int steps = 15 * k - 1 - (k - 1) - (exploring(2) + 1);
    const int opSteps = run(c, 4, steps, 0.003, 0.002);
    QCOMPARE(steps - opSteps, 2 * perPath());
  }

  // A path whose timed step takes more than twice another's best stops there, and is measured
  // again at the next re-check; stopped twice in a row, it sits out the re-checks of the next
  // kSitOut x (its step / the best) steps.
  void aFarSlowerPathStopsEarly() {
    const int k = int(DecodePathChooser::kRecheck);
    DecodePathChooser c;
    // exploring at 0 and k (stopped twice: sits out 60 x 2.5 = 150 steps, past the re-check
    // at 3k), at 7k (stopped again), not at 15k
    QCOMPARE(run(c, 4, 15 * k - 1, 0.001, 0.0025), 3 * abandoned());
    QCOMPARE(QString::fromStdString(c.summary()), QString("4:fused"));
    DecodePathChooser near;
    QCOMPARE(run(near, 4, 15 * k - 1, 0.001, 0.0019), 4 * perPath());  // within 2x: all its turns
    // slow only at first (a thread starting): tried again at the re-check, and chosen
    DecodePathChooser later;
    run(later, 4, k - 1, 0.001, 0.0025);
    QCOMPARE(QString::fromStdString(later.summary()), QString("4:fused"));
    run(later, 4, exploring(2) + 1, 0.001, 0.0008);
    QCOMPARE(QString::fromStdString(later.summary()), QString("4:op-by-op"));
  }

  // A path whose warm-up step already takes more than kHopeless times another's best stops at
  // that step (a cold start costs 2-3x): the demo model's op-by-op step at one row, ~18x the
  // fused one, costs one step at the start and one at the first re-check, then sits out
  // 60 x 18 steps; it is measured again after those (nothing is dropped for good), and a path
  // that became fast is chosen then.
  void aHopelessPathCostsOneStepAndSitsOut() {
    const int k = int(DecodePathChooser::kRecheck);
    DecodePathChooser c;
    QCOMPARE(run(c, 1, 15 * k - 1, 0.001, 0.018), 2);  // re-checks at k, 3k, 7k: sat out from k on
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused"));
    // the 3k … 15k re-checks were sat out (60 x 18 = 1080 steps from k, kMaxSitOut = 1024 at
    // most); the one at 31k is not
    const int ops = run(c, 1, 16 * k + exploring(2), 0.001, 0.0005);
    QVERIFY2(ops > 0, "measured again after sitting out");
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:op-by-op"));
    // two stops in a row are needed: stopped once (a thread starting), tried at the next re-check
    DecodePathChooser once;
    run(once, 1, k - 1, 0.001, 0.018);
    QVERIFY(run(once, 1, exploring(2) + 1, 0.001, 0.0005) >= perPath());
    QCOMPARE(QString::fromStdString(once.summary()), QString("1:op-by-op"));
  }

  // Stops count only in a row: a measurement the path runs through (within 2x) resets them, so
  // being stopped again later does not make it sit out the next re-check.
  void aFullMeasurementResetsTheStops() {
    const int k = int(DecodePathChooser::kRecheck);
    DecodePathChooser c;
    QCOMPARE(run(c, 4, k - 1, 0.001, 0.02), 1);             // steps 1..k-1: hopeless at once
    QCOMPARE(run(c, 4, 2 * k, 0.001, 0.0015), perPath());  // re-check at k: all its turns
    QCOMPARE(run(c, 4, 4 * k, 0.001, 0.02), 1);             // re-check at 3k: stopped once again
    QCOMPARE(run(c, 4, 4 * k, 0.001, 0.02), 1);             // re-check at 7k: measured, not sat out
    QCOMPARE(run(c, 4, 8 * k, 0.001, 0.02), 0);             // stopped twice in a row: sits out 15k
  }

  // A stall of one step (a timeslice lost: 20x a step) on a warm-up step of a path's second
  // turn does not throw away the figure its first turn measured; a stall on a timed step
  // never counted (the best of the timed steps).
  void aStalledWarmUpKeepsTheFigureMeasured() {
    const auto cost = [](DecodePath p) { return p == DecodePath::Fused ? 0.004 : p == DecodePath::OpByOp ? 0.006 : 0.0025; };
    const int turn = DecodePathChooser::kTurn;
    // turns: fused, split, op-by-op (stopped at its first timed step, past 2x the split's), then
    // the second turns of fused and split
    const int secondTurns = 2 * turn + DecodePathChooser::kWarmup + 1;
    for (int stall = secondTurns; stall < secondTurns + 2 * turn; ++stall) {
      DecodePathChooser c(true);
      for (int step = 0; step < 60; ++step) {
        const DecodePath p = c.pick(8);
        c.record(8, p, cost(p) * (step == stall ? 20.0 : 1.0));
      }
      QVERIFY2(c.summary() == "8:fused-split", qPrintable(QString("stall at step %1: %2").arg(stall).arg(QString::fromStdString(c.summary()))));
    }
  }

  // The split step's first step of a turn may wait milliseconds for its worker's vCPU to
  // wake (a VM's idle vCPU, after the unsplit turn before it: 4.5 ms against 0.16 ms steps was
  // seen): that step, 20x the fused one here, does not stop the path as hopeless; its timed
  // steps decide, at the first measurement and at the re-checks.
  void theSplitStepsFirstStepMayWaitForItsWorker() {
    DecodePathChooser c(true);
    DecodePath last = DecodePath::Fused;
    int splitSteps = 0;
    const int steps = 4 * int(DecodePathChooser::kRecheck);
    for (int step = 0; step < steps; ++step) {
      const DecodePath p = c.pick(8);
      const bool turnStart = p == DecodePath::FusedSplit && last != DecodePath::FusedSplit;
      const double cost = p == DecodePath::Fused ? 0.004 : p == DecodePath::OpByOp ? 0.03 : turnStart ? 0.08 : 0.0025;
      c.record(8, p, cost);
      splitSteps += p == DecodePath::FusedSplit;
      last = p;
    }
    QCOMPARE(QString::fromStdString(c.summary()), QString("8:fused-split"));
    QVERIFY2(splitSteps > steps * 3 / 4, qPrintable(QString("%1 split steps of %2").arg(splitSteps).arg(steps)));
    // a split step still as slow at its second step is hopeless there: two steps a measurement
    DecodePathChooser d(true);
    int slowSplit = 0;
    for (int step = 0; step + 1 < int(DecodePathChooser::kRecheck); ++step) {
      const DecodePath p = d.pick(8);
      slowSplit += p == DecodePath::FusedSplit;
      d.record(8, p, p == DecodePath::Fused ? 0.004 : 0.08);
    }
    QCOMPARE(slowSplit, 2);
    QCOMPARE(QString::fromStdString(d.summary()), QString("8:fused"));
  }

  // A burst of load as long as a turn (other threads busy for a few steps) slows one turn of
  // one path at most, never all of a path's: the faster path is still chosen.
  void aBurstOfLoadSlowsEveryPathAlike() {
    const int turn = DecodePathChooser::kTurn;
    for (int burstStart = 0; burstStart + turn <= exploring(3); ++burstStart) {
      DecodePathChooser c(true);
      const auto cost = [](DecodePath p) { return p == DecodePath::Fused ? 0.004 : p == DecodePath::OpByOp ? 0.006 : 0.0025; };
      for (int step = 0; step < 60; ++step) {
        const DecodePath p = c.pick(8);
        const bool burst = step >= burstStart && step < burstStart + turn;
        c.record(8, p, cost(p) * (burst ? 3.0 : 1.0));
      }
      QCOMPARE(QString::fromStdString(c.summary()), QString("8:fused-split"));
    }
  }

  // With 2+ threads the fused step split into row groups is a third candidate, for 2+ rows.
  void theSplitStepIsTriedWhereItCanSplit() {
    DecodePathChooser c(true);
    const auto cost = [](DecodePath p) { return p == DecodePath::Fused ? 0.004 : p == DecodePath::OpByOp ? 0.006 : 0.0025; };
    for (int i = 0; i < 50; ++i) {  // one row cannot be split
      const DecodePath p = c.pick(1);
      QVERIFY(p != DecodePath::FusedSplit);
      c.record(1, p, cost(p));
    }
    int splitSteps = 0;
    for (int i = 0; i < 50; ++i) {
      const DecodePath p = c.pick(8);
      splitSteps += p == DecodePath::FusedSplit;
      c.record(8, p, cost(p));
    }
    // the split step's turn comes before op-by-op's (op-by-op goes last), so op-by-op (0.006)
    // stops at the first timed step of its first turn, past twice the split's 0.0025
    QCOMPARE(splitSteps, 50 - perPath() - abandoned());
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused 8:fused-split"));
    // where splitting loses (weights that no longer stay in cache), it is tried and left
    const int ops = run(c, 32, 50, 0.010, 0.030);
    QCOMPARE(ops, abandoned());
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused 8:fused-split 32:fused"));

    DecodePathChooser oneThread;  // without a second thread, never
    for (int i = 0; i < 50; ++i) {
      const DecodePath p = oneThread.pick(8);
      QVERIFY(p != DecodePath::FusedSplit);
      oneThread.record(8, p, cost(p));
    }
  }
};

QTEST_GUILESS_MAIN(TestDecodePathChooser)
#include "test_decode_path_chooser.moc"
