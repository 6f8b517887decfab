#include "core/util/step_crew.h"

#include <chrono>

namespace crosslab::util {

namespace {

thread_local bool tInJob = false;

// Marks the thread for the scope of a group; restores what it was (a run(1, …) inside a group).
struct InJob {
  bool before = tInJob;
  InJob() { tInJob = true; }
  ~InJob() { tInJob = before; }
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

using Clock = std::chrono::steady_clock;

}  // namespace

bool StepCrew::inJob() { return tInJob; }

int StepCrew::workers() const {
  std::lock_guard<std::mutex> lk(mu_);
  return int(threads_.size());
}

StepCrew::~StepCrew() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

// The last group to end wakes the caller if it went to sleep. Sequentially consistent on both
// sides (pending_ then callerWaiting_ here, callerWaiting_ then pending_ there): either this
// thread sees the caller waiting, or the caller sees the count at zero.
void StepCrew::finishOne() {
  if (pending_.fetch_sub(1) == 1 && callerWaiting_.load()) {
    std::lock_guard<std::mutex> lk(mu_);
    done_.notify_all();
  }
}

void StepCrew::run(int groups, const std::function<void(int)>& job) {
  if (groups <= 1) {
    InJob in;
    job(0);
    return;
  }
  std::lock_guard<std::mutex> turn(runMu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    error_ = nullptr;
    // slots_[i] belongs to threads_[i]: a slot is kept only once its thread started (if
    // starting one throws, the crew stays as it was and the error reaches the caller)
    while (int(threads_.size()) < groups - 1) {
      auto slot = std::make_unique<Slot>();
      slot->ticket.store(run_);
      slots_.reserve(threads_.size() + 1);
      threads_.emplace_back(&StepCrew::work, this, slot.get(), int(threads_.size()) + 1, run_);
      slots_.push_back(std::move(slot));
    }
  }
  job_ = &job;
  ++run_;
  pending_.store(groups);
  for (int g = 1; g < groups; ++g) slots_[size_t(g - 1)]->ticket.store(run_);
  // A worker going to sleep counts itself before it last reads its ticket: either it sees the
  // new ticket or this sees it asleep (both sequentially consistent).
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    wake_.notify_all();
  }
  try {
    InJob in;
    job(0);
  } catch (...) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!error_) error_ = std::current_exception();
  }
  pending_.fetch_sub(1);
  // The other groups are running: poll for their end a while, then sleep until the last wakes us.
  const auto start = Clock::now();
  for (int i = 1; pending_.load() != 0; ++i) {
    if ((i & 31) == 0 && Clock::now() - start > std::chrono::microseconds(spinMicros_)) {
      std::unique_lock<std::mutex> lk(mu_);
      callerWaiting_.store(true);
      done_.wait(lk, [&] { return pending_.load() == 0; });
      callerWaiting_.store(false);
      break;
    }
    cpuRelax();
  }
  job_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lk(mu_);
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

// A worker runs its group of each run that hands it a ticket. Between runs it polls
// its ticket: with the pause hint for the first quarter of spinMicros_, then yielding the core to
// any thread that wants it, then asleep until run() wakes it.
void StepCrew::work(Slot* mine, int group, uint64_t seen) {
  Slot& slot = *mine;
  for (;;) {
    const auto start = Clock::now();
    const auto pauseFor = std::chrono::microseconds(spinMicros_ / 4), spinFor = std::chrono::microseconds(spinMicros_);
    uint64_t ticket = seen;
    for (int i = 1; (ticket = slot.ticket.load(std::memory_order_acquire)) == seen && !stopping_.load(std::memory_order_relaxed); ++i) {
      if ((i & 31) != 0) {
        cpuRelax();
        continue;
      }
      const auto elapsed = Clock::now() - start;
      if (elapsed < pauseFor) continue;
      if (elapsed < spinFor) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);
      wake_.wait(lk, [&] { return slot.ticket.load() != seen || stopping_.load(); });
      sleepers_.fetch_sub(1);
    }
    if (stopping_.load()) return;
    seen = ticket;
    try {
      InJob in;
      (*job_)(group);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    finishOne();
  }
}

}  // namespace crosslab::util
