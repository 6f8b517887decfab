#include "core/util/step_crew.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include "core/util/await_ready.h"

namespace crosslab::util {

namespace {

thread_local bool tInJob = false;

// Marks the thread for the scope of a group; restores what it was (a run(1, …) inside a group).
struct InJob {
  bool before = tInJob;
  InJob() { tInJob = true; }
  ~InJob() { tInJob = before; }
};

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

// Takes the next group of run `run`: none once the groups are all taken or a newer run began
// (a worker woken late for a run that has ended).
int StepCrew::claim(uint64_t run) {
  uint64_t c = claim_.load();
  for (;;) {
    const uint64_t next = c & 0xffff, groups = (c >> 16) & 0xffff;
    if ((c >> 32) != (run & 0xffffffff) || next >= groups) return -1;
    if (claim_.compare_exchange_weak(c, c + 1)) return int(next);
  }
}

// Runs one group of the current run; the last group to end wakes the caller if it went to
// sleep (awaitReady's handshake). A group taken under the current run keeps it from ending,
// so job_ stays valid for it.
void StepCrew::runGroup(int group) {
  try {
    InJob in;
    (*job_)(group);
  } catch (...) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!error_) error_ = std::current_exception();
  }
  if (pending_.fetch_sub(1) == 1 && callerAsleep_.load() > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    done_.notify_all();
  }
}

void StepCrew::keepOffCallerCpu() {
#ifdef __linux__
  const int me = sched_getcpu();
  if (me < 0 || me == keptOff_ || threads_.empty() || allowedCpus_.empty()) return;
  keptOff_ = me;  // once per CPU the caller is seen on (and per new worker), whether or not it can be done
  // all the caller's CPUs but its own; all of them when there are as many workers as other CPUs
  // or more (they would crowd those and leave the caller's idle once it is done)
  const bool away = threads_.size() < allowedCpus_.size();
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int cpu : allowedCpus_)
    if ((cpu != me || !away) && cpu < CPU_SETSIZE) CPU_SET(cpu, &mask);
  if (CPU_COUNT(&mask) == 0) return;
  for (std::thread& t : threads_)  // best effort: a refusal leaves the worker where the kernel put it
    pthread_setaffinity_np(t.native_handle(), sizeof mask, &mask);
#endif
}

void StepCrew::run(int groups, const std::function<void(int)>& job, int threads) {
  if (groups <= 1) {
    InJob in;
    job(0);
    return;
  }
  if (groups > 0xffff) throw std::invalid_argument("StepCrew::run: too many groups");
  const int helpers = (threads <= 0 ? groups : std::min(groups, threads)) - 1;
  std::lock_guard<std::mutex> turn(runMu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    error_ = nullptr;
    // slots_[i] belongs to threads_[i]: a slot is kept only once its thread started (if
    // starting one throws, the crew stays as it was and the error reaches the caller)
#ifdef __linux__
    cpu_set_t mine;
    if (threads_.empty() && int(threads_.size()) < helpers &&
        pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0) {
      allowedCpus_.clear();
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &mine)) allowedCpus_.push_back(cpu);
    }
#endif
    if (int(threads_.size()) < helpers) keptOff_ = -1;  // a new worker has the caller's affinity
    while (int(threads_.size()) < helpers) {
      auto slot = std::make_unique<Slot>();
      slot->ticket.store(run_);
      slots_.reserve(threads_.size() + 1);
      threads_.emplace_back(&StepCrew::work, this, slot.get(), run_);
      slots_.push_back(std::move(slot));
    }
  }
  keepOffCallerCpu();
  job_ = &job;
  ++run_;
  pending_.store(groups);
  claim_.store((run_ & 0xffffffff) << 32 | uint64_t(groups) << 16 | 1);  // group 0 is the caller's
  for (int w = 0; w < helpers; ++w) slots_[size_t(w)]->ticket.store(run_);
  // a worker asleep is woken (awaitReady's handshake)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    wake_.notify_all();
  }
  runGroup(0);
  for (int g; (g = claim(run_)) >= 0;) runGroup(g);
  // The groups left are running: poll for their end (pause hints only), then sleep until the
  // last one wakes us.
  const std::chrono::microseconds spin(spinMicros_);
  awaitReady([&] { return pending_.load() == 0; }, spin, spin, mu_, done_, callerAsleep_);
  job_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lk(mu_);
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

// A worker takes groups of each run that hands it a ticket until none is left. Between runs
// it polls its ticket: with the pause hint for the first quarter of spinMicros_, then
// yielding the core, then asleep.
void StepCrew::work(Slot* slot, uint64_t seen) {
  const std::chrono::microseconds spin(spinMicros_);
  for (;;) {
    awaitReady([&] { return slot->ticket.load() != seen || stopping_.load(); }, spin, spin / 4, mu_, wake_, sleepers_);
    if (stopping_.load()) return;
    seen = slot->ticket.load();
    for (int g; (g = claim(seen)) >= 0;) runGroup(g);
  }
}

}  // namespace crosslab::util
