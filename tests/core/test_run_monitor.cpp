// RunMonitor: every way a run dies, in the formats LLaMA-Factory and we write.
#include <QtTest>

#include <cmath>

#include "core/train/run_monitor.h"

using crosslab::train::parseEventLine;
using crosslab::train::parseTimedelta;
using crosslab::train::RunMonitor;
using crosslab::train::RunMonitorOptions;
using crosslab::train::RunState;

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
    QCOMPARE(m.state(), RunState::Running);
    m.feedEventLine(R"({"current_steps": 10, "total_steps": 10, "epoch": 3.0, "percentage": 100.0, "elapsed_time": "0:05:48", "remaining_time": "0:00:00"})");
    m.processExited(0);
    QCOMPARE(m.state(), RunState::Finished);
  }

  void ourEndEventFinishes() {
    RunMonitor m;
    m.feedEventLine(R"({"event": "start"})");
    m.feedEventLine(R"({"step": 1, "loss": 2.0, "lr": 1e-4})");
    m.feedEventLine(R"({"event": "end"})");
    m.processExited(0);
    QCOMPARE(m.state(), RunState::Finished);
  }

  void exitWithoutEndEventFails() {
    RunMonitor m;
    m.feedEventLine(lfLine(5, 111, 0.5));
    m.processExited(0);
    QCOMPARE(m.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(m.reason()).contains("without an end event"));
  }

  void tracebackNamesTheException() {
    RunMonitor m;
    m.feedEventLine(lfLine(3, 111, 0.5));
    m.feedOutput("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n");
    m.feedOutput("    main()\nFileNotFoundError: tokenizer.json not found\n");
    QCOMPARE(m.state(), RunState::Failed);
    QCOMPARE(QString::fromStdString(m.reason()), QString("Python traceback: FileNotFoundError: tokenizer.json not found"));
    m.processExited(1);
    QVERIFY(QString::fromStdString(m.reason()).contains("FileNotFoundError"));  // first cause kept
  }

  void oomInCudaAndRocmWording() {
    RunMonitor cuda;
    cuda.feedOutputLine("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    QCOMPARE(cuda.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(cuda.reason()).contains("(CUDA)"));
    RunMonitor rocm;
    rocm.feedOutput("Traceback (most recent call last):\n");
    rocm.feedOutput("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.2 GiB. GPU 0 has 191.98 GiB of which 120.00 MiB is free.\n");
    QCOMPARE(rocm.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(rocm.reason()).startsWith("GPU out of memory (ROCm)"));
  }

  void killedAndExit137() {
    RunMonitor a;
    a.feedOutputLine("Killed");
    QCOMPARE(a.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(a.reason()).contains("killed"));
    RunMonitor b;
    b.feedEventLine(lfLine(1, 10, 1.0));
    b.processExited(137);
    QCOMPARE(b.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(b.reason()).contains("137"));
  }

  void ncclAndRcclErrors() {
    RunMonitor a;
    a.feedOutputLine("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error");
    QCOMPARE(a.state(), RunState::Failed);
    RunMonitor b;
    b.feedOutputLine("RCCL error: ncclSystemError: System call (e.g. socket, malloc) or external library call failed");
    QCOMPARE(b.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(b.reason()).contains("NCCL/RCCL"));
    RunMonitor c;  // a warning is not a failure
    c.feedOutputLine("NCCL WARN Could not enable P2P");
    QCOMPARE(c.state(), RunState::Running);
  }

  void nanLossInEventsAndInOutput() {
    RunMonitor a;
    a.feedEventLine(R"({"current_steps": 7, "total_steps": 111, "loss": NaN, "lr": 1e-4})");
    QCOMPARE(a.state(), RunState::Failed);
    QVERIFY(QString::fromStdString(a.reason()).contains("step 7"));
    RunMonitor b;
    b.feedOutputLine("{'loss': nan, 'grad_norm': nan, 'learning_rate': 9e-05, 'epoch': 0.3}");
    QCOMPARE(b.state(), RunState::Failed);
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
    QCOMPARE(m.state(), RunState::Running);
    c.now += 50;
    m.tick();
    QCOMPARE(m.state(), RunState::Running);  // 53 s quiet: under the floor
    c.now += 10;
    m.tick();
    QCOMPARE(m.state(), RunState::Stalled);
    QVERIFY(QString::fromStdString(m.reason()).contains("last step 5"));
    c.now += 3600 - 63;  // an hour after the last sign of life
    QCOMPARE(m.costWhileDead(2.99), 2.99);
    m.feedEventLine(lfLine(6, 111, 0.5));  // it was only slow
    QCOMPARE(m.state(), RunState::Running);
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
    QCOMPARE(m.state(), RunState::Running);
  }

  void outputCountsAsLifeAndKeepsLastLines() {
    FakeClock c;
    RunMonitorOptions opt;
    opt.keepLines = 3;
    opt.startupGraceSeconds = 100;
    RunMonitor m(opt, c.fn());
    c.now += 90;
    m.feedOutput("loading shards 1/4\rloading shards 2/4\r");
    c.now += 90;
    m.tick();
    QCOMPARE(m.state(), RunState::Running);
    m.feedOutput("a\nb\nc\nd");
    m.processExited(1);
    QCOMPARE(m.lastLines().size(), size_t{3});
    QCOMPARE(QString::fromStdString(m.lastLines().back()), QString("d"));  // partial line flushed at exit
    QCOMPARE(m.state(), RunState::Failed);
  }
};

QTEST_GUILESS_MAIN(TestRunMonitor)
#include "test_run_monitor.moc"
