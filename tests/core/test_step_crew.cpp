// StepCrew: every group of every run runs once (group 0 on the caller, the others on whichever
// thread takes them first, the caller included), and run() returns only after all of them;
// workers that went to sleep between runs are woken; an exception in any group reaches the
// caller after the others finished; inJob() marks the groups' threads; the workers stay off the
// caller's CPU.
#include <QtTest>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/util/await_ready.h"
#include "core/util/step_crew.h"

using crosslab::util::StepCrew;

class TestStepCrew : public QObject {
  Q_OBJECT

 private slots:
  // util::awaitReady, the crew's wait and the SSE writer's: two threads hand a turn back and
  // forth, each waking the other only when it counts itself asleep (the waking side of the
  // handshake). Never polling (every wait may sleep) and polling for longer than the test: a
  // lost wake-up hangs, and the test's timeout fails it. The first also has to have slept.
  void awaitReadyLosesNoWake() {
    for (const std::chrono::microseconds spin : {std::chrono::microseconds(0), std::chrono::microseconds(60'000'000)}) {
      std::mutex mu;
      std::condition_variable cv[2];
      std::atomic<int> asleep[2] = {0, 0};
      std::atomic<int> turn{0}, wakes{0};
      constexpr int kRounds = 20000;
      const auto side = [&](int me) {
        for (int round = 0; round < kRounds; ++round) {
          crosslab::util::awaitReady([&] { return turn.load() == me; }, spin, std::chrono::microseconds(0), mu, cv[me],
                                     asleep[me]);
          turn.store(1 - me);
          if (asleep[1 - me].load() > 0) {
            ++wakes;
            std::lock_guard<std::mutex> lk(mu);
            cv[1 - me].notify_all();
          }
        }
      };
      std::thread other(side, 1);
      side(0);
      other.join();
      QCOMPARE(turn.load(), 0);  // 2 x kRounds hand-overs, the last back to side 0
      if (spin.count() == 0) QVERIFY(wakes.load() > 0);
    }
  }

  void everyGroupRunsOnce() {
    StepCrew crew;
    std::mutex mu;
    std::vector<int> counts(4, 0);
    std::thread::id groupZero;
    crew.run(4, [&](int g) {
      std::lock_guard<std::mutex> lk(mu);
      ++counts[size_t(g)];
      if (g == 0) groupZero = std::this_thread::get_id();
    });
    QCOMPARE(counts, std::vector<int>({1, 1, 1, 1}));
    QCOMPARE(groupZero, std::this_thread::get_id());  // group 0 is the caller's
    QCOMPARE(crew.workers(), 3);
  }

  // More groups than threads: the threads take them one at a time, each group once.
  void moreGroupsThanThreads() {
    StepCrew crew;
    for (int run = 0; run < 2000; ++run) {
      std::vector<std::atomic<int>> hits(9);
      crew.run(9, [&](int g) { hits[size_t(g)].fetch_add(1); }, 2);
      for (int g = 0; g < 9; ++g)
        if (hits[size_t(g)].load() != 1)
          QFAIL(qPrintable(QString("run %1: group %2 ran %3 times").arg(run).arg(g).arg(hits[size_t(g)].load())));
    }
    QCOMPARE(crew.workers(), 1);
  }

  // A worker held up inside its group (a thread that lost its core) does not hold up the
  // groups it has not taken: the caller runs them. The worker's group here ends only once
  // every other group has ended, which with groups bound to threads never happens.
  void theCallerTakesTheGroupsNoWorkerTook() {
    StepCrew crew;
    const auto caller = std::this_thread::get_id();
    for (int run = 0; run < 20; ++run) {
      std::atomic<int> finished{0}, onWorker{0};
      std::atomic<bool> timedOut{false};
      // Waits for `done`, giving up (and failing the test) after 20 s instead of hanging.
      const auto waitFor = [&](const auto& done) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!done())
          if (std::chrono::steady_clock::now() > until) {
            timedOut.store(true);
            return;
          }
      };
      crew.run(4, [&](int g) {
        if (g == 0) waitFor([&] { return onWorker.load() == 1; });  // group 0 ends once the worker took a group
        if (std::this_thread::get_id() != caller) {  // the worker: wait for the three others
          onWorker.fetch_add(1);
          waitFor([&] { return finished.load() >= 3; });
        }
        finished.fetch_add(1);
      }, 2);
      QVERIFY(!timedOut.load());
      QCOMPARE(finished.load(), 4);
      QCOMPARE(onWorker.load(), 1);  // the worker took one group and waited in it: the caller ran three
    }
  }

  // Back-to-back runs of changing sizes (the scheduler's batch grows and shrinks): each run sees
  // exactly its groups' work, none left over from the previous run or run twice.
  void manyRunsOfChangingSizes() {
    StepCrew crew;
    std::vector<std::atomic<int>> hits(5);
    for (int run = 0; run < 20000; ++run) {
      const int groups = 1 + run % 5;
      for (auto& h : hits) h.store(0);
      crew.run(groups, [&](int g) { hits[size_t(g)].fetch_add(1); });
      for (int g = 0; g < 5; ++g)
        if (hits[size_t(g)].load() != (g < groups ? 1 : 0))
          QFAIL(qPrintable(QString("run %1 (%2 groups): group %3 ran %4 times").arg(run).arg(groups).arg(g).arg(hits[size_t(g)].load())));
    }
    QCOMPARE(crew.workers(), 4);
  }

  // run() returns only when the slowest group is done, also when the caller went to sleep
  // waiting for it (a group far longer than the spin).
  void waitsForTheSlowestGroup() {
    StepCrew crew(50);
    std::atomic<bool> slowDone{false};
    crew.run(3, [&](int g) {
      if (g == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        slowDone.store(true);
      }
    });
    QVERIFY(slowDone.load());
  }

  // Workers asleep after a pause far past their spin are woken by the next run.
  void wakesSleepingWorkers() {
    StepCrew crew(20);
    std::atomic<int> ran{0};
    for (int i = 0; i < 20; ++i) {
      crew.run(3, [&](int) { ran.fetch_add(1); });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // 100x the spin: they sleep
    }
    QCOMPARE(ran.load(), 60);
  }

  // A group's exception reaches the caller only after every other group ended, whether a
  // worker's group threw or the caller's own (group 0); the crew works on afterwards.
  void anExceptionReachesTheCallerAfterEveryGroupEnded() {
    StepCrew crew(20);  // a short spin: the caller also goes to sleep waiting
    for (int failing : {1, 0}) {
      const QString what = QString("group %1 failed").arg(failing);
      std::atomic<int> finished{0};
      bool thrown = false;
      try {
        crew.run(3, [&](int g) {
          if (g == failing) throw std::runtime_error(what.toStdString());
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          finished.fetch_add(1);
        });
      } catch (const std::runtime_error& e) {
        thrown = QString(e.what()) == what;
      }
      QVERIFY2(thrown, qPrintable(what));
      QCOMPARE(finished.load(), 2);
      std::atomic<int> ran{0};  // no stale error
      crew.run(3, [&](int) { ran.fetch_add(1); });
      QCOMPARE(ran.load(), 3);
    }
  }

  void inJobMarksTheGroupsThreads() {
    StepCrew crew;
    QVERIFY(!StepCrew::inJob());
    std::atomic<int> marked{0};
    crew.run(3, [&](int) { marked.fetch_add(StepCrew::inJob() ? 1 : 0); });
    crew.run(1, [&](int) { marked.fetch_add(StepCrew::inJob() ? 1 : 0); });
    QCOMPARE(marked.load(), 4);
    // a one-group run inside a group leaves the group marked
    StepCrew inner;
    std::atomic<int> stillMarked{0};
    crew.run(2, [&](int) {
      inner.run(1, [](int) {});
      stillMarked.fetch_add(StepCrew::inJob() ? 1 : 0);
    });
    QCOMPARE(stillMarked.load(), 2);
    QVERIFY(!StepCrew::inJob());
  }

  // The worker is kept off the caller's CPU (step_crew.h): pinned to one CPU after the crew
  // started, the caller finds its worker's affinity without that CPU, and the worker's group
  // ran elsewhere; pinned to another, the worker follows (the first CPU allowed again). The
  // worker is made to take group 1: group 0 waits until another thread has begun it.
  void workersStayOffTheCallersCpu() {
    cpu_set_t all;
    QVERIFY(pthread_getaffinity_np(pthread_self(), sizeof all, &all) == 0);
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &all)) cpus.push_back(cpu);
    if (cpus.size() < 2) QSKIP("one CPU: nowhere else to keep the worker");
    struct Unpin {  // the test thread gets its CPUs back however the test ends
      cpu_set_t all;
      ~Unpin() { pthread_setaffinity_np(pthread_self(), sizeof all, &all); }
    } unpin{all};
    StepCrew crew;
    std::atomic<bool> begun{false};
    std::atomic<int> workerCpu{-1};
    std::thread::id group1Thread;
    cpu_set_t workerMask;
    const auto job = [&](int g) {
      if (g == 1) {
        group1Thread = std::this_thread::get_id();
        workerCpu = sched_getcpu();
        pthread_getaffinity_np(pthread_self(), sizeof workerMask, &workerMask);
        begun = true;
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!begun && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    };
    crew.run(2, job);  // starts the worker with the caller's (unpinned) affinity
    for (int caller : {cpus[0], cpus[1], cpus[0]}) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(caller, &one);
      QVERIFY(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
      begun = false;
      crew.run(2, job);
      QVERIFY2(begun && group1Thread != std::this_thread::get_id(), "the worker never took group 1");
      QVERIFY2(!CPU_ISSET(caller, &workerMask), qPrintable(QString("worker may run on the caller's CPU %1").arg(caller)));
      QCOMPARE(CPU_COUNT(&workerMask), int(cpus.size()) - 1);
      QVERIFY(workerCpu.load() != caller);
    }
    // as many workers as CPUs: none is kept off any (they would crowd the others)
    QVERIFY(pthread_setaffinity_np(pthread_self(), sizeof all, &all) == 0);
    StepCrew many;
    const int groups = int(cpus.size()) + 1;
    std::mutex mu;
    std::vector<int> masks;  // each group's thread's CPU count, run off the caller
    const auto caller = std::this_thread::get_id();
    for (int round = 0; round < 2; ++round)
      many.run(groups, [&](int g) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (; g == 0 && std::chrono::steady_clock::now() < deadline; std::this_thread::yield()) {
          std::lock_guard<std::mutex> lk(mu);
          if (int(masks.size()) > round) break;  // a worker has run a group of this round
        }
        cpu_set_t m;
        pthread_getaffinity_np(pthread_self(), sizeof m, &m);
        std::lock_guard<std::mutex> lk(mu);
        if (std::this_thread::get_id() != caller) masks.push_back(CPU_COUNT(&m));
      });
    QVERIFY(!masks.empty());
    for (int n : masks) QCOMPARE(n, int(cpus.size()));
  }

  // Two threads sharing a crew take turns: each run still sees only its own groups.
  void concurrentCallersTakeTurns() {
    StepCrew crew;
    std::atomic<int> a{0}, b{0};
    std::thread other([&] {
      for (int i = 0; i < 2000; ++i) crew.run(2, [&](int) { b.fetch_add(1); });
    });
    for (int i = 0; i < 2000; ++i) crew.run(3, [&](int) { a.fetch_add(1); });
    other.join();
    QCOMPARE(a.load(), 6000);
    QCOMPARE(b.load(), 4000);
  }
};

QTEST_GUILESS_MAIN(TestStepCrew)
#include "test_step_crew.moc"
