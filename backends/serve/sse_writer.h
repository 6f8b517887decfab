#pragma once
// The thread that writes every streaming response's frames (with the second one it hands over
// to: writer_thread.h). Internal to the server (openai_server.cpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/serve/sse_stream.h"
#include "backends/serve/writer_thread.h"

namespace crosslab::serve::sse {

// One thread writes the frames of every streaming response (one of two at a time: a nice-19
// one, and one at the process's nice value for when the first is starved; writer_thread.h).
// The scheduler emits a token for each running stream at the end of a step; with a thread per
// connection, each token woke its connection's thread (a futex wake and two context switches
// per token, on a 2-core VM a fifth of the server's time at 32 streams). Here a step's tokens
// cost at most one wake (the scheduler's after-step hook pokes the writer; a request's end pokes
// it too): the writer passes over the streams with something new and writes each one's frames
// in one chunk. When a pass takes longer than a step, the next pass finds several tokens per
// stream and sends them together (vLLM's output collector merges deltas the same way when its
// consumer lags).
// The connection threads only wait: each attaches its stream and blocks until the writer is
// done with its DataSink (the sink belongs to the blocked connection thread; the writer uses it
// meanwhile, under the mutex handoff). While it waits, a connection thread watches its socket
// for the client hanging up and cancels the request at once (serve()): a writer behind at
// nice 19, or holding tokens for a stream interval, may not write to that stream again before
// its sequence ends.
// A write blocks when the client's socket buffer is full (a slow link, a stopped client).
// A stream whose write took longer than kSlowWrite (not counting the time the writer waited
// for a core meanwhile) is handed back to its connection thread, which writes the rest itself
// as before, so one slow reader holds up the others once, for one write, not for the rest of
// its stream. (A client that stopped reading holds the writer until httplib's write timeout,
// 5 s, fails the write and drops it: the same drop as with a thread per connection.)
// With a stream interval above 1 (ServerOptions::streamInterval) a stream's tokens after its
// first wait in its channel until that many have arrived, or its end, or maxHold has passed
// since the oldest of them came (a stream whose sequence waits, behind a long prefill say,
// still sees its tokens).
// A stream handed back to its connection thread writes whatever has arrived each time, as a
// slow reader's stream does anyway.
class SseWriter {
 public:
  // `notice`: told when the nice-19 writer hands over (may be empty; ServerOptions::notice).
  SseWriter(int streamInterval, int maxHoldMs, bool lowPriority, std::function<void(const std::string&)> notice)
      : interval_(size_t(std::max(1, streamInterval))),
        maxHold_(std::max(0, maxHoldMs)),
        lowPriority_(lowPriority),
        notice_(std::move(notice)),
        active_(lowPriority ? kLow : kHigh),
        low_([this] { loop(kLow); }),
        high_([this] { loop(kHigh); }) {}
  ~SseWriter() {
    stop();
    low_.join();
    high_.join();
  }
  SseWriter(const SseWriter&) = delete;
  SseWriter& operator=(const SseWriter&) = delete;

  // From the scheduler thread: a step ended, or a request did. Cheap when a pass is already due
  // or the writer is polling for it (no wake: see loop()).
  void poke() {
    if (pending_.exchange(true)) return;
    if (asleep_.load() == 0) return;  // awake or polling: it sees pending_ before it sleeps
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_one();
  }

  static constexpr std::chrono::milliseconds kSlowWrite{20};
  // How long a write to a stream's own socket may wait for room: httplib's write timeout
  // (CPPHTTPLIB_WRITE_TIMEOUT_SECOND), which the server keeps, so a stalled client is dropped
  // after as long as through the sink.
  static constexpr std::chrono::milliseconds kWriteTimeout{5000};

  // From a connection thread: serves `s` through `sink` and returns when the writer is done
  // with it: Finished (the caller ends the chunked body), Failed, or HandedBack. `socket`: the
  // connection's (-1: unknown); when its client hangs up meanwhile, `hungUp` runs, once.
  SseStream::State serve(const std::shared_ptr<SseStream>& s, httplib::DataSink& sink, int socket,
                         const std::function<void()>& hungUp);

  bool stopping() {
    std::lock_guard<std::mutex> lk(mu_);
    return stopping_;
  }
  int64_t handedBack() const { return handedBack_; }
  int64_t writes() const { return writes_; }
  int64_t socketWrites() const { return socketWrites_; }  // of writes(): straight to the socket
  // Times the work moved from the nice-19 writer to the other one (writer_thread.h).
  int64_t handoffsToHigh() const { return handoffsToHigh_; }

  // Fails every stream (their connection threads return) and refuses new ones.
  void stop() {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    cv_.notify_all();
    turn_.notify_all();
  }

 private:
  // Between passes the writer polls pending_ for a while when passes have been coming quickly
  // (the steps of a small batch on a small model, tens of microseconds apart), so that poke()
  // need not wake it: a wake is a futex call on the scheduler thread and, for a writer asleep
  // on an idle vCPU, an interrupt to another core, paid per token at one stream (11% of the
  // scheduler thread's perf samples, demo model, one stream through HTTP). It polls for up to
  // twice the last gap between passes, at most kPollFor, yielding the core to any thread that
  // wants it, and only while a stream is attached (steps without one, say of requests that do
  // not stream, poke it too); passes further apart (a larger batch's steps, a larger model's)
  // find it asleep, as before. The poll and the handshake with poke() are the step crew's
  // (util::awaitReady). kPollFor was 100 µs, chosen where the demo model's one-stream steps
  // came ~70 µs apart; on a VM where they take 120-140 µs no pass was polled for, and the
  // wake path was again 4-5% of the server's perf samples. At 500 µs one stream's steps are
  // polled for on either (16 of 16 alternations faster, median 1.09x; at 8, 16 and 32 streams
  // no loss: README, thirty-seventh session); a pass further apart pays a wake of under 3%.
  static constexpr std::chrono::microseconds kPollFor{500};

  // Two writer threads, one at nice 19 and one at the process's nice value; one works at a time
  // (active_), the other waits on turn_ (writer_thread.h says why and when they swap).
  static constexpr int kLow = 0, kHigh = 1;

  void loop(int role);

  // Ends `s` (mu_ held) and wakes its connection thread.
  void end(SseStream& s, SseStream::State state);

  // Passes while this thread is the active writer, mu_ held; false on stop, true to hand over.
  bool work(std::unique_lock<std::mutex>& lk, int role);

  const size_t interval_;
  const std::chrono::milliseconds maxHold_;
  const bool lowPriority_;
  const std::function<void(const std::string&)> notice_;
  std::mutex mu_;
  std::condition_variable cv_, closed_;
  std::atomic<bool> pending_{false};
  std::atomic<int> asleep_{0};  // the writer waits on cv_ (or is about to)
  std::atomic<int64_t> handedBack_{0}, writes_{0}, socketWrites_{0}, handoffsToHigh_{0};
  std::condition_variable turn_;
  int active_;  // under mu_
  std::atomic<bool> stopping_{false};  // set under mu_; read while polling too
  std::vector<std::shared_ptr<SseStream>> streams_;
  // The other processes' CPU while the nice-19 writer has streams: paused by that writer when it
  // ends the last stream, resumed by serve() when it adds the first (a starved writer would see
  // it only after the wait it is to count). Under neighboursMu_, taken inside mu_ where both are.
  std::mutex neighboursMu_;
  writer_thread::NeighbourLoad neighbours_;
  std::thread low_, high_;  // last: they start after the members they use
};

}  // namespace crosslab::serve::sse
