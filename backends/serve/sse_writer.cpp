#include "backends/serve/sse_writer.h"

#include <httplib.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <deque>
#include <string>
#include <utility>

#include "backends/serve/connection_socket.h"
#include "backends/serve/writer_thread.h"
#include "core/util/await_ready.h"
#include "core/util/run_queue_wait.h"

namespace crosslab::serve::sse {

SseStream::State SseWriter::serve(const std::shared_ptr<SseStream>& s, httplib::DataSink& sink, int socket,
                                  const std::function<void()>& hungUp) {
  // With the socket known, the connection thread sleeps in poll() on it and on an eventfd that
  // end() signals, so a client that hangs up is noticed at once, not at the stream's next write
  // (with a stream interval, or a writer behind at nice 19, that may be its end).
  const int wake = socket >= 0 ? ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
  std::unique_lock<std::mutex> lk(mu_);
  if (stopping_) {
    if (wake >= 0) ::close(wake);
    return SseStream::State::Failed;
  }
  s->sink = &sink;
  s->wake = wake;
  if (streams_.empty() && lowPriority_) {  // the writer has streams from now, whenever it gets a core to see them
    std::lock_guard<std::mutex> g(neighboursMu_);
    neighbours_.resume();
  }
  streams_.push_back(s);
  pending_ = true;
  cv_.notify_one();
  if (wake < 0) {
    closed_.wait(lk, [&] { return s->state != SseStream::State::Open; });
    return s->state;
  }
  bool watching = true;  // the socket: until the client hung up (POLLRDHUP stays set)
  while (s->state == SseStream::State::Open) {
    lk.unlock();
    pollfd fds[2] = {{wake, POLLIN, 0}, {socket, POLLRDHUP, 0}};
    const int n = ::poll(fds, watching ? 2 : 1, 1000);  // the timeout only guards against a lost wake
    if (n > 0 && (fds[0].revents & POLLIN)) {
      uint64_t count = 0;
      while (::read(wake, &count, sizeof count) < 0 && errno == EINTR) {
      }
    }
    if (n > 0 && watching && peerClosedIn(fds[1].revents)) {
      watching = false;
      hungUp();
    }
    lk.lock();
  }
  s->wake = -1;  // end() wrote to it under mu_, before this thread saw the state
  const SseStream::State state = s->state;
  lk.unlock();
  ::close(wake);
  return state;
}

void SseWriter::end(SseStream& s, SseStream::State state) {
  s.state = state;
  if (s.wake < 0) return;  // closed_.notify_all() wakes it
  const uint64_t one = 1;
  while (::write(s.wake, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void SseWriter::loop(int role) {
  writer_thread::setUp(role == kLow && lowPriority_);  // off: neither at nice 19 (the low one never works)
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    turn_.wait(lk, [&] { return active_ == role || stopping_; });
    if (stopping_ || !work(lk, role)) break;
    active_ = 1 - role;  // work() handed over
    pending_ = true;     // the other's first pass comes at once
    turn_.notify_all();
    if (role == kLow) {
      ++handoffsToHigh_;
      if (notice_) {  // at most once per kRetryLow: the other writer works that long first
        lk.unlock();
        notice_("serve: other processes keep the cores busy and starve the stream writer at nice 19; streams are "
                "written at the server's own priority for the next " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(writer_thread::kRetryLow).count()) +
                " s (--writer-priority normal: always)");
        lk.lock();
      }
    }
  }
  if (active_ != role) return;  // the active one may be mid-pass, using the streams' sinks
  for (auto& s : streams_) end(*s, SseStream::State::Failed);
  streams_.clear();
  closed_.notify_all();
}

bool SseWriter::work(std::unique_lock<std::mutex>& lk, int role) {
  using Clock = std::chrono::steady_clock;
  const auto since = Clock::now();
  std::vector<std::shared_ptr<SseStream>> pass;
  bool idle = streams_.empty();  // no streams (left after the last pass): the neighbours' count paused
  // Slow: over kSlowWrite less the wait for a core meanwhile (a full socket, not a preemption).
  const util::RunQueueWait runQueue;
  std::chrono::nanoseconds waitedMark{0};
  const bool low = role == kLow;  // only the nice-19 writer reads its waits: two preads a write
  const auto slowWrite = [&](Clock::duration took) {
    if (took <= kSlowWrite) return false;
    if (!low) return true;
    const auto waited = runQueue.waited();
    return took - (waited - waitedMark) > kSlowWrite;
  };
  std::chrono::nanoseconds waitedAtPass = runQueue.waited();
  std::array<Clock::time_point, writer_thread::kStarvedTimes> longWaits{};  // the last ones' times
  size_t longWaitCount = 0;
  bool starved = false;
  if (low) {  // counted from now: not over the other writer's spell
    std::lock_guard<std::mutex> g(neighboursMu_);
    neighbours_ = writer_thread::NeighbourLoad();
    if (idle) neighbours_.pause();
  }
  Clock::time_point lastPass{};
  Clock::duration gap = Clock::duration::max();
  for (;;) {
    std::chrono::microseconds pollFor{0};
    if (!streams_.empty() && gap < kPollFor)
      pollFor = std::chrono::duration_cast<std::chrono::microseconds>(std::min<Clock::duration>(2 * gap, kPollFor));
    lk.unlock();
    const auto ready = [&] { return pending_.load() || stopping_.load(); };
    util::awaitReady(ready, pollFor, std::chrono::microseconds(0), mu_, cv_, asleep_);
    lk.lock();
    if (stopping_) return false;
    pending_ = false;
    const auto now = Clock::now();
    gap = lastPass == Clock::time_point{} ? Clock::duration::max() : now - lastPass;
    lastPass = now;
    // The other processes' CPU counts while there are streams to write (NeighbourLoad): from
    // when serve() added the first, not from when this writer, perhaps starved, got to see it,
    // until the pass that ends the last one (below). Only this writer removes streams, so a
    // writer that was not idle still has some here.
    idle = streams_.empty();
    pass = streams_;
    lk.unlock();
    const auto waitedNow = low ? runQueue.waited() : waitedAtPass;
    if (waitedNow - waitedAtPass > writer_thread::kStarved) {
      longWaits[longWaitCount++ % longWaits.size()] = now;
      const bool often = longWaitCount >= longWaits.size() &&
                         now - longWaits[longWaitCount % longWaits.size()] < writer_thread::kStarvedWindow;
      std::lock_guard<std::mutex> g(neighboursMu_);
      starved = (often || waitedNow - waitedAtPass > writer_thread::kStarvedOnce) &&
                neighbours_.coresSinceLast() > writer_thread::kNeighbourCores;
    }
    waitedAtPass = waitedNow;
    std::vector<std::pair<SseStream*, SseStream::State>> ended;
    for (const auto& s : pass) {
      bool finished = false;
      std::deque<Event> events = s->tokenSent ? s->ch->takeNow(interval_, maxHold_) : s->ch->takeNow();
      if (!events.empty()) s->tokenSent = true;
      const std::string out = s->framesFor(std::move(events), &finished);
      if (out.empty()) continue;
      const auto t0 = std::chrono::steady_clock::now();
      if (low) waitedMark = runQueue.waited();
      ++writes_;
      bool wrote = false;
      if (s->rawSocket < 0) {
        wrote = s->sink->write(out.data(), out.size());
      } else {
        ++socketWrites_;
        wrote = writeChunk(s->rawSocket, out, kWriteTimeout);
      }
      if (!wrote) {
        s->ch->gone = true;  // the client left: the scheduler drops the sequence at its next token
        ended.emplace_back(s.get(), SseStream::State::Failed);
      } else if (finished) {
        ended.emplace_back(s.get(), SseStream::State::Finished);
      } else if (slowWrite(std::chrono::steady_clock::now() - t0)) {
        ended.emplace_back(s.get(), SseStream::State::HandedBack);
      }
    }
    lk.lock();
    if (!ended.empty()) {
      for (auto& [s, state] : ended) {
        end(*s, state);
        if (state == SseStream::State::HandedBack) ++handedBack_;
      }
      streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                    [](const auto& s) { return s->state != SseStream::State::Open; }),
                     streams_.end());
      closed_.notify_all();
      if (streams_.empty() && !idle) {  // none left: the count pauses until the next ones
        idle = true;
        if (low) {
          std::lock_guard<std::mutex> g(neighboursMu_);
          neighbours_.pause();
        }
      }
    }
    if (stopping_) return false;
    if (low ? starved : lowPriority_ && Clock::now() - since > writer_thread::kRetryLow) return true;
  }
}

}  // namespace crosslab::serve::sse
