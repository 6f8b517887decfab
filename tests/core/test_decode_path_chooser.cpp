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
    // figure never counts, however good or bad); fused: one slow timed step, then fast ones —
    // the best of the timed steps counts: noise only slows a step
    for (int t = 0; t < DecodePathChooser::kTries; ++t) {
      for (int i = 0; i < turn; ++i) {
        QCOMPARE(c.pick(8), DecodePath::Fused);
        c.record(8, DecodePath::Fused, i < warmup ? 1.0 : t == 0 && i == warmup ? 0.010 : 0.004);
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
    QCOMPARE(run(c, 1, 50, 0.001, 0.009), abandoned());
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
  // again at each re-check (stopping at once again while it stays that slow).
  void aFarSlowerPathStopsEarly() {
    const int k = int(DecodePathChooser::kRecheck);
    DecodePathChooser c;
    QCOMPARE(run(c, 4, 15 * k - 1, 0.001, 0.0025), 4 * abandoned());  // exploring at 0, k, 3k, 7k
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
    // op-by-op (0.006) stops at the first timed step of its second turn, past twice the split's 0.0025
    QCOMPARE(splitSteps, 50 - perPath() - DecodePathChooser::kTurn - abandoned());
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
