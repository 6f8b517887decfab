#pragma once
// The thread that writes every streaming response's frames (SseWriter, openai_server.cpp): its
// name, scheduling policy and nice value, and when its work moves to a thread at another nice
// value.
//
// It runs as SCHED_BATCH: its wake-up does not preempt a running thread. With the default
// policy each step's wake-up took a core from one of the step's threads mid-step, and the
// step's other thread waited for it at the step crew's barrier (on the 2-core VM, the demo model
// through HTTP at 8 to 32 streams lost 6-37% of its tok/s to that; the price of not preempting
// is a token that waits up to a scheduler tick: README, twenty-first session).
//
// It runs at nice 19 (kLowNice), the lowest share short of SCHED_IDLE: when the server's own
// threads keep the cores busy (the step's threads, a client on the same machine) it gets about
// 1/70 of a busy thread's share, so it falls behind the steps and sends several tokens per
// write, one write and one wake of the reader per stream for a few steps (on the 2-core VM, the
// demo model through HTTP at 8 to 32 streams gained a quarter to a third in tok/s, and ITL p99
// at 32 streams went from 5 to 10-22 ms: README, twenty-fifth session).
// A CPU-bound neighbour (a training run on the same cores) would starve it at that share: with
// two busy loops on the two cores, tokens then came in bursts (ITL p99 185 ms at 32 streams, and
// half the tok/s of a writer at nice 0). So a writer that waited for a core more than kStarved
// between two passes kStarvedTimes times within kStarvedWindow, or more than kStarvedOnce once,
// while other processes used more than kNeighbourCores of CPU, hands its work to a second writer
// thread that kept the process's nice value (an unprivileged thread cannot lower its nice value
// again, nor start a thread below its own), and that one, after kRetryLow, hands it back. One of
// the two works at a time.
#include <chrono>
#include <functional>
#include <optional>

namespace crosslab::serve::writer_thread {

constexpr int kLowNice = 19;
// The server's own load makes such waits too, at 32 streams several a second: the other
// processes' share tells the two apart (a benchmark client on the same machine used 6-25% of a
// core; the two busy loops, one core or more).
constexpr std::chrono::milliseconds kStarved{50};
constexpr int kStarvedTimes = 3;
constexpr std::chrono::seconds kStarvedWindow{1};
// Starved harder, it makes fewer passes, and its long waits can spread over more than the window
// (beside a compiler and four busy processes on the 2-core VM, under ASan, it never handed over):
// one wait this long is enough.
constexpr std::chrono::milliseconds kStarvedOnce{250};
constexpr double kNeighbourCores = 0.5;
constexpr std::chrono::seconds kRetryLow{60};

// Names the calling thread "sse-writer" (for perf, and the tests that find it) and makes it
// SCHED_BATCH; `low`: at nice kLowNice too. Failing, it keeps the process's policy and nice value.
void setUp(bool low);

// The CPU other processes used (all of the machine's busy time, /proc/stat, less this process's,
// /proc/self/stat), in cores over an interval, leaving out the spells the writer had no streams:
// what other processes did while it had nothing to write did not starve it. (Counted, a
// benchmark client's start-up, most of a second of a core loading its libraries before its
// first request, joined the end of the sweep before in one interval, and the writer handed its
// work over in the next sweep's first seconds.)
// A spell with streams starts when the server adds the first (SseWriter::serve), not when the
// writer gets a core to see it: a writer starved through a whole stream, shown the stream only
// after the wait, counted none of that wait's neighbours, found under 0.2 s left and never handed
// over (the tokens of every short stream then came at its end, all at once).
class NeighbourLoad {
 public:
  struct Sample {
    long long machine = 0, self = 0;  // clock ticks: the machine's busy time, this process's
    std::chrono::steady_clock::time_point at;
  };
  using Source = std::function<bool(Sample*)>;  // false: could not be read
  static bool readProc(Sample* s);               // /proc/stat and /proc/self/stat, now

  explicit NeighbourLoad(Source source = readProc, long ticksPerSecond = 0);  // 0: sysconf's
  // Over the time since the last call that returned a figure (or construction), less the spells
  // between pause() and resume(); -1 when the files cannot be read or under 0.2 s of it have
  // passed (the next call then counts from the same point).
  double coresSinceLast();
  void pause();   // the writer has no streams from now
  void resume();  // it has streams again: the spell since pause() is left out

 private:
  Source source_;
  double ticksPerSecond_;
  std::optional<Sample> from_;     // the interval's start (none: not read yet)
  std::optional<Sample> paused_;   // since pause()
  long long skippedTicks_ = 0;     // other processes' ticks in the spells left out so far
  std::chrono::steady_clock::duration skipped_{0};
};

}  // namespace crosslab::serve::writer_thread
