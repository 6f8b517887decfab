#pragma once
// How long the calling thread has waited for a core while runnable: the second field of
// /proc/thread-self/schedstat, in nanoseconds. The server's SSE writer runs at nice 19, so a
// write of its can take long because the writer was preempted rather than because the client's
// socket was full; it tells the two apart with this (backends/serve/openai_server.cpp).
#include <chrono>

namespace crosslab::util {

class RunQueueWait {
 public:
  // Opens the calling thread's schedstat; the object then reads that thread's, from any thread.
  RunQueueWait();
  ~RunQueueWait();
  RunQueueWait(const RunQueueWait&) = delete;
  RunQueueWait& operator=(const RunQueueWait&) = delete;

  // False when the kernel does not offer it (no CONFIG_SCHED_INFO, no /proc): waited() is then 0.
  bool available() const { return fd_ >= 0; }
  // The total so far: one pread.
  std::chrono::nanoseconds waited() const;

 private:
  int fd_ = -1;
};

}  // namespace crosslab::util
