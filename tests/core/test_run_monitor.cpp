// RunMonitor: every way a run dies, in the formats LLaMA-Factory and we write.
#include <QtTest>

#include <cmath>

#include "core/train/run_monitor.h"

using crosslab::train::parseEventLine;
using crosslab::train::parseTimedelta;
using crosslab::train::RunMonitor;
using crosslab::train::RunMonitorOptions;
using crosslab::train::RunStatus;

namespace {

// trainer_log.jsonl lines as LLaMA-Factory 0.9.x writes them (keys with None dropped).
std::string lfLine(int step, int total, double loss) {
  return "{\"current_steps\": " + std::to_string(step) + ", \"total_steps\": " + std::to_string(total) +
         ", \"loss\": " + std::to_string(loss) + ", \"lr\": 9.5e-05, \"epoch\": 0.27, \"percentage\": 9.01, " +
         "\"elapsed_time\": \"0:00:31\", \"remaining_time\": \"0:05:13\"}";
}

struct FakeClock {
  double now = 1000;
  RunMonitor::Clock fn() {
    return [this] { return now; };
  }
};

}  // namespace

class TestRunMonitor : public QObject {
  Q_OBJECT

 private slots:
  void parsesTimedeltaStrings() {
    QCOMPARE(*parseTimedelta("5:13:22"), 5 * 3600 + 13 * 60 + 22.0);
    QCOMPARE(*parseTimedelta("1 day, 2:03:04"), 86400 + 2 * 3600 + 3 * 60 + 4.0);
    QCOMPARE(*parseTimedelta("3 days, 0:00:01.500000"), 3 * 86400 + 1.5);
    QVERIFY(!parseTimedelta("soon"));
  }

  void parsesOldAndNewKeysAndNulls() {
    auto p = parseEventLine(R"({"current_steps": 5, "total_steps": 111, "loss": 0.56, "learning_rate": 1e-4, "eval_loss": null, "elapsed_time": "0:01:00"})");
    QVERIFY(p);
    QCOMPARE(*p->step, std::int64_t{5});
    QCOMPARE(*p->lr, 1e-4);  // pre-0.9.1 name
    QVERIFY(!p->evalLoss);   // pre-0.7.1 writes nulls
    QCOMPARE(*p->elapsedSeconds, 60.0);
    p = parseEventLine(R"({"current_steps": 6, "loss": NaN, "lr": 1e-4})");
    QVERIFY(p && p->loss && std::isnan(*p->loss));
    QVERIFY(!parseEventLine("not json"));
  }

  void finishesWhenLastStepReachedAndExitZero() {
    FakeClock c;
    RunMonitor m({}, c.fn());
    m.feedEventLine(lfLine(5, 10, 0.5));
    QCOMPARE(m.status(), RunStatus::Running);
    m.feedEventLine(R"({"current_steps": 10, "total_steps": 10, "epoch": 3.0, "percentage": 100.0, "elapsed_time": "0:05:48", "remaining_time": "0:00:00"})");
    m.processExited(0);
    QCOMPARE(m.status(), RunStatus::Finished);
  }

  void ourEndEventFinishes() {
    RunMonitor m;
    m.feedEventLine(R"({"event": "start"})");
    m.feedEventLine(R"({"step": 1, "loss": 2.0, "lr": 1e-4})");
    m.feedEventLine(R"({"event": "end"})");
    m.processExited(0);
    QCOMPARE(m.status(), RunStatus::Finished);
  }

  void exitWithoutEndEventFails() {
    RunMonitor m;
    m.feedEventLine(lfLine(5, 111, 0.5));
    m.processExited(0);
    QCOMPARE(m.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(m.reason()).contains("without an end event"));
  }

  void tracebackNamesTheException() {
    RunMonitor m;
    m.feedEventLine(lfLine(3, 111, 0.5));
    m.feedOutput("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n");
    m.feedOutput("    main()\nFileNotFoundError: tokenizer.json not found\n");
    QCOMPARE(m.status(), RunStatus::Failed);
    QCOMPARE(QString::fromStdString(m.reason()), QString("Python traceback: FileNotFoundError: tokenizer.json not found"));
    m.processExited(1);
    QVERIFY(QString::fromStdString(m.reason()).contains("FileNotFoundError"));  // first cause kept
  }

  void oomInCudaAndRocmWording() {
    RunMonitor cuda;
    cuda.feedOutputLine("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    QCOMPARE(cuda.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(cuda.reason()).contains("(CUDA)"));
    RunMonitor rocm;
    rocm.feedOutput("Traceback (most recent call last):\n");
    rocm.feedOutput("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.2 GiB. GPU 0 has 191.98 GiB of which 120.00 MiB is free.\n");
    QCOMPARE(rocm.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(rocm.reason()).startsWith("GPU out of memory (ROCm)"));
  }

  void killedAndExit137() {
    RunMonitor a;
    a.feedOutputLine("Killed");
    QCOMPARE(a.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(a.reason()).contains("killed"));
    RunMonitor b;
    b.feedEventLine(lfLine(1, 10, 1.0));
    b.processExited(137);
    QCOMPARE(b.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(b.reason()).contains("137"));
  }

  void ncclAndRcclErrors() {
    RunMonitor a;
    a.feedOutputLine("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error");
    QCOMPARE(a.status(), RunStatus::Failed);
    RunMonitor b;
    b.feedOutputLine("RCCL error: ncclSystemError: System call (e.g. socket, malloc) or external library call failed");
    QCOMPARE(b.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(b.reason()).contains("NCCL/RCCL"));
    RunMonitor c;  // a warning is not a failure
    c.feedOutputLine("NCCL WARN Could not enable P2P");
    QCOMPARE(c.status(), RunStatus::Running);
  }

  void nanLossInEventsAndInOutput() {
    RunMonitor a;
    a.feedEventLine(R"({"current_steps": 7, "total_steps": 111, "loss": NaN, "lr": 1e-4})");
    QCOMPARE(a.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(a.reason()).contains("step 7"));
    RunMonitor b;
    b.feedOutputLine("{'loss': nan, 'grad_norm': nan, 'learning_rate': 9e-05, 'epoch': 0.3}");
    QCOMPARE(b.status(), RunStatus::Failed);
  }

  void stallIsDetectedWithinAMinuteOfSteadySteps() {
    FakeClock c;
    RunMonitorOptions opt;
    opt.stallFloorSeconds = 60;
    RunMonitor m(opt, c.fn());
    for (int s = 1; s <= 5; ++s) {
      m.feedEventLine(lfLine(s, 111, 0.5));
      c.now += 3;  // 3 s per step
      m.tick();
    }
    QCOMPARE(m.status(), RunStatus::Running);
    c.now += 50;
    m.tick();
    QCOMPARE(m.status(), RunStatus::Running);  // 53 s quiet: under the floor
    c.now += 10;
    m.tick();
    QCOMPARE(m.status(), RunStatus::Stalled);
    QVERIFY(QString::fromStdString(m.reason()).contains("last step 5"));
    c.now += 3600 - 63;  // an hour after the last sign of life
    QCOMPARE(m.costWhileDead(2.99), 2.99);
    m.feedEventLine(lfLine(6, 111, 0.5));  // it was only slow
    QCOMPARE(m.status(), RunStatus::Running);
  }

  void slowStepsRaiseTheStallThreshold() {
    FakeClock c;
    RunMonitor m({}, c.fn());
    for (int s = 1; s <= 4; ++s) {
      m.feedEventLine(lfLine(s, 111, 0.5));
      c.now += 100;  // 100 s per logging step (a 70B run)
    }
    QCOMPARE(m.stallThreshold(), 400.0);
    c.now += 250;
    m.tick();
    QCOMPARE(m.status(), RunStatus::Running);
  }

  // The lab's friction item 5, reproduced: three steps, then a run that never goes quiet —
  // a warning every half second, as a hung collective or a stuck data loader prints —
  // and never logs another step. Output is not progress: it is stalled.
  void warningsForeverWithoutStepsIsStalled() {
    FakeClock c;
    RunMonitorOptions opt;
    opt.stallFloorSeconds = 10;
    RunMonitor m(opt, c.fn());
    for (int s = 1; s <= 3; ++s) {
      m.feedEventLine(lfLine(s, 111, 0.5));
      c.now += 1;
    }
    for (int i = 0; i < 400 && m.status() == RunStatus::Running; ++i) {
      c.now += 0.5;
      m.feedOutput("[W ProcessGroupNCCL.cpp:1856] Warning: waiting for collective\n");
      m.tick();
    }
    QCOMPARE(m.status(), RunStatus::Stalled);
    QVERIFY(m.secondsSinceProgress() > 10 && m.secondsSinceProgress() < 12);  // judged within the floor, not 200 s
    const QString why = QString::fromStdString(m.reason());
    QVERIFY2(why.contains("last step 3 of 111"), qPrintable(why));
    QVERIFY2(why.contains("waiting for collective"), qPrintable(why));  // the last lines
    QVERIFY2(why.contains("s ago"), qPrintable(why));
    // The meter: what the stall cost at the box's price, from the last step on.
    QCOMPARE(m.costWhileDead(3600.0), m.secondsSinceProgress());
    m.feedEventLine(lfLine(4, 111, 0.5));  // a new step: it was only slow
    QCOMPARE(m.status(), RunStatus::Running);
    QVERIFY(m.reason().empty());
  }

  // Before the first step a run loads its model and tokenizes: a longer allowance, but
  // counted from the start, not from the last output line.
  void startupAllowanceCountsFromTheStart() {
    FakeClock c;
    RunMonitorOptions opt;
    opt.keepLines = 3;
    opt.stallFloorSeconds = 10;
    opt.startupGraceSeconds = 100;
    RunMonitor m(opt, c.fn());
    c.now += 90;
    m.feedOutput("loading shards 1/4\rloading shards 2/4\r");
    m.tick();
    QCOMPARE(m.status(), RunStatus::Running);  // talking, within the allowance
    c.now += 20;
    m.feedOutput("tokenizing 50%\n");
    m.tick();
    QCOMPARE(m.status(), RunStatus::Stalled);  // 110 s without a step, however chatty
    QVERIFY2(QString::fromStdString(m.reason()).contains("no step logged"), m.reason().c_str());
    m.feedOutput("a\nb\nc\nd");
    m.processExited(1);
    QCOMPARE(m.lastLines().size(), size_t{3});
    QCOMPARE(QString::fromStdString(m.lastLines().back()), QString("d"));  // partial line flushed at exit
    QCOMPARE(m.status(), RunStatus::Failed);
  }

  void evalAndCheckpointEventsAreProgress() {
    FakeClock c;
    RunMonitorOptions opt;
    opt.stallFloorSeconds = 10;
    RunMonitor m(opt, c.fn());
    m.feedEventLine(R"({"current_steps": 1, "loss": 1.0, "event": "step"})");
    c.now += 8;
    m.feedEventLine(R"({"current_steps": 1, "eval_loss": 0.9, "event": "eval"})");
    c.now += 8;
    m.feedEventLine(R"({"current_steps": 1, "event": "checkpoint", "message": "checkpoint-1"})");
    c.now += 8;
    m.tick();
    QCOMPARE(m.status(), RunStatus::Running);  // 24 s since the step, 8 s since progress
  }

  void stopEventEndsAsStopped() {
    RunMonitor m;
    m.feedEventLine(R"({"current_steps": 3, "loss": 1.0, "event": "step"})");
    m.feedEventLine(R"({"current_steps": 3, "event": "end", "message": "stopped"})");
    m.processExited(0);
    QCOMPARE(m.status(), RunStatus::Stopped);
    QVERIFY(QString::fromStdString(m.reason()).contains("step 3"));
  }

  void cliErrorLineNamesTheExit() {
    RunMonitor m;
    m.feedOutput("error: no tokenizer.json in /m\n");
    m.processExited(1);
    QCOMPARE(QString::fromStdString(m.reason()), QString("exited with status 1: error: no tokenizer.json in /m"));
  }
};

QTEST_GUILESS_MAIN(TestRunMonitor)
#include "test_run_monitor.moc"
