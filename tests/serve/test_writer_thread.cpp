// The stream writer's count of other processes' CPU (backends/serve/writer_thread.h), on a
// scripted source of /proc samples: the figure is in cores over the interval, the spells the
// writer had no streams (pause() … resume()) are left out of it, ticks and time both, and an
// interval under 0.2 s gives no figure and keeps counting from the same point. Then the same
// count on this machine's /proc.
#include <QtTest>

#include <deque>

#include "backends/serve/writer_thread.h"

using crosslab::serve::writer_thread::NeighbourLoad;
using Clock = std::chrono::steady_clock;

namespace {

// Samples handed out in order; each: seconds since t0, the machine's busy ticks, ours.
struct Script {
  Clock::time_point t0 = Clock::now();
  std::deque<NeighbourLoad::Sample> samples;
  void add(double seconds, long long machine, long long self) {
    samples.push_back({machine, self, t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))});
  }
  NeighbourLoad::Source source() {
    return [this](NeighbourLoad::Sample* s) {
      if (samples.empty()) return false;
      *s = samples.front();
      samples.pop_front();
      return true;
    };
  }
};

}  // namespace

class TestWriterThread : public QObject {
  Q_OBJECT

 private slots:
  void coresOverTheInterval() {
    Script script;
    script.add(0, 1000, 500);
    script.add(1.0, 1250, 600);  // 250 busy ticks in a second, 100 of them ours: 1.5 cores of others
    NeighbourLoad load(script.source(), 100);
    QCOMPARE(load.coresSinceLast(), 1.5);
    script.add(1.1, 1260, 600);  // 0.1 s later: too short, no figure …
    QCOMPARE(load.coresSinceLast(), -1.0);
    script.add(1.5, 1300, 620);  // … and the next counts from 1.0 s: (50 - 20) ticks over 0.5 s
    QCOMPARE(load.coresSinceLast(), 0.6);
  }

  // A client starting (a core busy for 0.8 s) while the writer has nothing to write, then
  // streams with other processes nearly idle: without the pause the interval says 0.82 cores
  // (over kNeighbourCores: the writer would hand over); with it, 0.1.
  void aSpellWithoutStreamsIsLeftOut() {
    for (const bool paused : {false, true}) {
      Script script;
      script.add(0, 0, 0);       // streams end
      if (paused) script.add(0, 0, 0);      // pause()
      if (paused) script.add(0.8, 80, 0);   // resume(): others used 80 ticks meanwhile
      script.add(1.0, 82, 0);    // 0.2 s of streams: 2 ticks of others
      NeighbourLoad load(script.source(), 100);
      if (paused) {
        load.pause();
        load.resume();
      }
      const double cores = load.coresSinceLast();
      QVERIFY2(std::abs(cores - (paused ? 0.1 : 0.82)) < 1e-9, qPrintable(QString::number(cores)));
      QCOMPARE(cores > crosslab::serve::writer_thread::kNeighbourCores, !paused);
    }
  }

  // Left out means the spell's ticks and its time: what is left must still reach 0.2 s.
  void whatIsLeftMustBeLongEnough() {
    Script script;
    script.add(0, 0, 0);
    script.add(0.1, 10, 0);   // pause() after 0.1 s of streams
    script.add(5.0, 400, 0);  // resume()
    script.add(5.05, 405, 0); // 0.15 s of streams in all: no figure yet
    script.add(5.2, 410, 0);  // 0.3 s: (10 + 10) ticks of others
    NeighbourLoad load(script.source(), 100);
    load.pause();
    load.resume();
    QCOMPARE(load.coresSinceLast(), -1.0);
    const double cores = load.coresSinceLast();
    QVERIFY2(std::abs(cores - 20.0 / 100 / 0.3) < 1e-9, qPrintable(QString::number(cores)));
  }

  // An unreadable source: no figure, and nothing left out that was never counted.
  void unreadableSource() {
    Script script;  // empty: every read fails
    NeighbourLoad load(script.source(), 100);
    load.pause();
    load.resume();
    QCOMPARE(load.coresSinceLast(), -1.0);
    script.add(1.0, 100, 0);  // readable from now: the count starts here
    QCOMPARE(load.coresSinceLast(), -1.0);
    script.add(2.0, 150, 0);
    QCOMPARE(load.coresSinceLast(), 0.5);
  }

  // This machine's /proc: read, and a figure once 0.2 s have passed (cores are not negative).
  void readsProc() {
    NeighbourLoad::Sample s;
    QVERIFY(NeighbourLoad::readProc(&s));
    QVERIFY(s.machine > 0 && s.self >= 0);
    NeighbourLoad load;
    QTest::qSleep(250);
    QVERIFY(load.coresSinceLast() >= 0);
  }
};

QTEST_GUILESS_MAIN(TestWriterThread)
#include "test_writer_thread.moc"
