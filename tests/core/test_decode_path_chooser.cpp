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

 private slots:
  void triesBothThenPicksTheFaster() {
    DecodePathChooser c;
    // the paths take turns; fused: one slow try, then fast ones — the best of the tries
    // counts: noise only slows a step
    for (int i = 0; i < DecodePathChooser::kTries; ++i) {
      QCOMPARE(c.pick(8), DecodePath::Fused);
      c.record(8, DecodePath::Fused, i == 0 ? 0.010 : 0.004);
      QCOMPARE(c.pick(8), DecodePath::OpByOp);
      c.record(8, DecodePath::OpByOp, 0.005 + 0.001 * i);
    }
    for (int i = 2 * DecodePathChooser::kTries; i + 1 < int(DecodePathChooser::kRecheck); ++i)  // up to the re-check
      QCOMPARE(c.pick(8), DecodePath::Fused);
    QCOMPARE(QString::fromStdString(c.summary()), QString("8:fused"));
  }

  void eachBatchSizeOnItsOwn() {
    DecodePathChooser c;
    QCOMPARE(run(c, 1, 50, 0.001, 0.009), DecodePathChooser::kTries);
    QCOMPARE(run(c, 32, 50, 0.020, 0.010), 50 - DecodePathChooser::kTries);
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused 32:op-by-op"));
  }

  // The machine changes (another process, a larger context): the choice follows, by re-measuring.
  void measuresAgainLaterAndLessOften() {
    DecodePathChooser c;
    const int k = int(DecodePathChooser::kRecheck), tries = DecodePathChooser::kTries;
    run(c, 4, k - 1, 0.001, 0.002);
    QCOMPARE(QString::fromStdString(c.summary()), QString("4:fused"));
    run(c, 4, 2 * tries + 1, 0.003, 0.002);  // the re-check at step k sees the change
    QCOMPARE(QString::fromStdString(c.summary()), QString("4:op-by-op"));
    // up to step 15k - 1: re-checks at 3k and 7k only (after 2k, then 4k steps), each trying fused kTries times
    const int steps = 15 * k - 1 - (k + 2 * tries);
    const int opSteps = run(c, 4, steps, 0.003, 0.002);
    QCOMPARE(steps - opSteps, 2 * tries);
  }

  // A burst of load as long as a path's tries (other threads busy for a few steps) slows
  // steps of every path, never all the tries of one: the faster path is still chosen.
  void aBurstOfLoadSlowsEveryPathAlike() {
    for (int burstStart = 0; burstStart + DecodePathChooser::kTries <= 3 * DecodePathChooser::kTries; ++burstStart) {
      DecodePathChooser c(true);
      const auto cost = [](DecodePath p) { return p == DecodePath::Fused ? 0.004 : p == DecodePath::OpByOp ? 0.006 : 0.0025; };
      for (int step = 0; step < 60; ++step) {
        const DecodePath p = c.pick(8);
        const bool burst = step >= burstStart && step < burstStart + DecodePathChooser::kTries;
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
    QCOMPARE(splitSteps, 50 - 2 * DecodePathChooser::kTries);
    QCOMPARE(QString::fromStdString(c.summary()), QString("1:fused 8:fused-split"));
    // where splitting loses (weights that no longer stay in cache), it is tried and left
    const int ops = run(c, 32, 50, 0.010, 0.030);
    QCOMPARE(ops, DecodePathChooser::kTries);
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
