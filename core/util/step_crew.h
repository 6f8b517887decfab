#pragma once
// StepCrew: a few threads that run one short job split into groups (the fused decode step's
// row groups, or a one-group step's large products split by rows, core/model/
// llama_decode_cpu.cpp), with the caller running group 0 itself and any group no worker took.
//
// Why not the OpenMP pool: a server runs libgomp with OMP_WAIT_POLICY=PASSIVE
// (core/util/openmp_waits.h), so its idle workers sleep at once, and on a VM waking a sleeping
// vCPU costs tens of microseconds per step, against steps of 0.1-0.5 ms on a small model. A
// spinning libgomp (its default) takes back a core from the HTTP threads in every gap, and
// for milliseconds. The crew's workers spin only between steps and only briefly: after a job
// they poll for the next one for `spinMicros` (first with the CPU's pause hint, then yielding
// the core to any thread that wants it), then sleep until woken.
//
// The workers are kept off the caller's CPU. Linux may start or wake a worker on the CPU of
// the thread that woke it, and there the worker gets the core only when the busy caller is
// preempted: the caller then runs every group itself, one after the other, while the other CPU
// idles, for hundreds of steps until the load balancer moves one of them (seen on the 2-vCPU
// VM: the demo model at 8 rows with runtime LoRA, split steps of ~230 µs with the worker on the
// caller's CPU against ~150 µs apart; the scheduler's path chooser, timing split steps then,
// ran the unsplit step for most of a run). So each run checks the caller's CPU, and when it
// is not the one the workers were last kept off, the workers' affinity becomes the CPUs the
// caller could use when the crew started, less the caller's (the kernel moves a worker at
// once). Where that leaves no CPU, where there are as many workers as other CPUs or more, or
// where the affinity cannot be read (more than 1024 CPUs), nothing changes.
//
// Jobs must not start OpenMP work of their own: inJob() is true on a thread while it runs a
// group, and parallel loops inside a group run serially (as they do inside an OpenMP region).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace crosslab::util {

class StepCrew {
 public:
  static constexpr int kDefaultSpinMicros = 200;
  explicit StepCrew(int spinMicros = kDefaultSpinMicros) : spinMicros_(spinMicros) {}
  ~StepCrew();
  StepCrew(const StepCrew&) = delete;
  StepCrew& operator=(const StepCrew&) = delete;

  // Runs job(g) for g = 0 … groups-1 on up to `threads` threads (0: one per group): group 0 on
  // the calling thread, the others taken one at a time by whichever thread is free first —
  // the crew's workers (started on first need) and the caller once its group is done. So a
  // worker that is slow to wake or loses its core to another process holds up only a group it
  // already took, never one it has not begun: the caller runs those itself. Returns when every
  // group is done. The first exception a group threw is rethrown here, after all groups ended.
  // One run at a time: concurrent callers take turns (so a group must not start a run of
  // several groups on its own crew: it would wait for itself).
  void run(int groups, const std::function<void(int)>& job, int threads = 0);

  // True on a thread while it runs a group of some crew's job.
  static bool inJob();
  int workers() const;  // threads started so far (groups - 1 at most)

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> ticket{0};  // the run number this worker was last handed
  };
  void work(Slot* slot, uint64_t seen);
  void keepOffCallerCpu();  // see the header comment
  int claim(uint64_t run);  // the next group of run `run` not yet taken, or -1
  void runGroup(int group);

  const int spinMicros_;
  std::mutex runMu_;  // one run at a time
  mutable std::mutex mu_;  // sleeping and waking, the error, the thread list
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Slot>> slots_;  // one per worker: its ticket for the runs it helps with
  std::vector<int> allowedCpus_;              // the caller's CPUs when the first worker started
  int keptOff_ = -1;                          // the caller's CPU the workers are kept off (-1: none)
  uint64_t run_ = 0;                          // runs so far (the caller's, under runMu_)
  std::atomic<int> pending_{0};               // groups of the current run not finished
  // The groups handed out: (run & 0xffffffff) << 32 | groups << 16 | next group; a thread
  // takes a group by advancing `next` while the run is the one it was woken for.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> sleepers_{0};              // workers asleep on wake_ (or about to be)
  std::atomic<int> callerAsleep_{0};         // the caller asleep on done_ (or about to be)
  std::atomic<bool> stopping_{false};
  const std::function<void(int)>* job_ = nullptr;  // written before the tickets are handed out
  std::exception_ptr error_;
};

}  // namespace crosslab::util
