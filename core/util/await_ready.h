#pragma once
// Waiting for another thread's flag: poll it a while, then sleep. The step crew's workers and
// caller (core/util/step_crew.h) and the server's SSE writer (backends/serve/openai_server.cpp)
// wait this way between steps: a wake costs the waking thread a futex call and, for a thread
// asleep on an idle vCPU, an interrupt to another core, so a waiter expecting the flag soon polls
// instead.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace crosslab::util {

// The CPU's hint for a polling loop (x86 PAUSE, Arm YIELD): the poll costs its sibling
// hyperthread and the memory system less, and the loop leaves it sooner once the flag changes.
// On other CPUs it does nothing.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls ready() for up to `spin` — with the pause hint, and from `yieldAfter` on yielding the
// core to any thread that wants it — then sleeps on `cv` under `mu`, counted in `asleep`: the
// side that makes ready() true writes first and reads `asleep` after (both sequentially
// consistent), so either it sees the sleeper and wakes it under `mu`, or the sleeper's last
// check, made after counting itself, sees ready() true. ready() is called without `mu` held
// while polling: what it reads must be atomic.
template <class Ready>
void awaitReady(const Ready& ready, std::chrono::microseconds spin, std::chrono::microseconds yieldAfter, std::mutex& mu,
                std::condition_variable& cv, std::atomic<int>& asleep) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int i = 1; !ready(); ++i) {
    if ((i & 31) != 0) {
      cpuRelax();
      continue;
    }
    const auto elapsed = Clock::now() - start;
    if (elapsed < yieldAfter) continue;
    if (elapsed < spin) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lk(mu);
    asleep.fetch_add(1);
    cv.wait(lk, ready);
    asleep.fetch_sub(1);
    return;
  }
}

}  // namespace crosslab::util
