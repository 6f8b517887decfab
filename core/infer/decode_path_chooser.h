#pragma once
// Which decode path the batch scheduler runs for a batch of n rows: the fused CPU step
// (core/model/llama_decode_cpu.cpp), the same step with its rows split into one group per
// thread (each group through every layer on its own: LlamaModel::setDecodeSplit), or the
// op-by-op ATen path. Which is faster depends on the model, the dtype, the machine, n and the
// context length (the fused step wins at small n on small models; the split one as attention
// over a growing context takes over; a large batch of a large model can favour ATen's GEMMs),
// so the scheduler measures:
//   - each path runs kTries turns of kTurn consecutive steps at each batch size, the paths
//     taking turns (fused, split, op-by-op; a burst of load from other threads, such as a
//     serving run's HTTP threads, slows every path's turns alike); the first kWarmup steps of a turn are not timed: after
//     a switch a path runs slow for a few steps (the split one's worker thread and idle core
//     waking: 2-3x a steady step on the demo model for ~3 steps, enough to lose to the unsplit
//     step when tries alternated step by step);
//   - then the fastest by its best timed step runs (robust to interference, which only slows);
//   - all are measured again after 64, 128, 256 … steps of that size: the first choice is made
//     at the shortest contexts, while requests are still arriving, so it is confirmed soon and
//     then ever less often. A path whose timed step takes more than twice another path's
//     best stops there until the next re-check (op-by-op on a small model is 5-20x slower:
//     8 of its steps per measurement cost a sixth of a 256-token run), and one whose warm-up
//     step takes more than kHopeless times another's best stops at that step (a cold start
//     costs 2-3x, not 8x: on the demo model op-by-op is ~18x the fused step at one row) —
//     only before the path has a timed figure in this measurement: a stalled warm-up step of
//     a later turn must not throw away a good figure; and never the split step's first step of
//     a turn, which may wait milliseconds for its worker's vCPU to wake on a VM;
//   - a path stopped that way at two measurements in a row sits out the re-checks of the next
//     kSitOut x (its step / the best) steps (kMaxSitOut at most), so that measuring it again
//     costs a few percent of the run: on the demo model at one row, 12 op-by-op steps of 2.3 ms
//     each in a 512-token run (a third of its decode time) became 2. A measurement it runs
//     through resets the count. Stopped once is not enough: the split step's
//     very first steps, starting its thread, can be as slow, so it is always tried again at
//     the next re-check; and nothing is dropped for good.
// The split is tried only where it can split (2+ threads, 2+ rows). Torch-free; the scheduler
// thread owns it.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace crosslab::infer {

enum class DecodePath { Fused, OpByOp, FusedSplit };
const char* decodePathName(DecodePath p);  // "fused", "op-by-op", "fused-split"

class DecodePathChooser {
 public:
  static constexpr int kTries = 2;    // turns per path before choosing
  static constexpr int kTurn = 4;     // steps in a turn
  static constexpr int kWarmup = 2;   // untimed steps at the start of a turn: the best of the
                                      // kTries x (kTurn - kWarmup) = 4 timed steps counts
  static constexpr uint64_t kRecheck = 64;    // steps of one size before the first re-check
  static constexpr double kHopeless = 8;      // a warm-up step this many times another's best: stop
  static constexpr double kSitOut = 60;       // steps sat out per unit of (step / best): 20x the
                                              // 3 steps a stopped measurement costs, ~5%
  static constexpr uint64_t kMaxSitOut = 1024;  // at most: one stalled step must not bar a path
                                                // for good
  static constexpr size_t kPaths = 3;

  // split: FusedSplit is a candidate (the scheduler has 2+ threads) for batches of 2+ rows.
  explicit DecodePathChooser(bool split = false) : split_(split) {}

  DecodePath pick(int rows);
  void record(int rows, DecodePath path, double seconds);
  // The current choice per batch size, e.g. "1:fused 8:fused 32:op-by-op" (for logs).
  std::string summary() const;
  // Changes whenever a choice may have changed (the summary is worth rebuilding).
  uint64_t revision() const { return revision_; }

 private:
  struct Size {
    std::array<double, kPaths> best{};  // per path; 0 = not measured yet
    std::array<int, kPaths> tries{};    // turns done
    std::array<int, kPaths> stops{};    // measurements in a row that stopped the path as far slower
    std::array<uint64_t, kPaths> sitOutUntil{};  // no re-measuring the path before this step
    int turnPath = 0, turnLeft = 0;     // the turn under way: its path and steps to go
    uint64_t used = 0, recheckAt = kRecheck, steps = 0;
  };
  size_t candidates(int rows) const { return split_ && rows >= 2 ? 3 : 2; }
  DecodePath fastest(int rows, const Size& s) const;
  double bestOfOthers(int rows, const Size& s, size_t path) const;  // 0: none measured
  void stop(Size& s, size_t path, double ratio);  // far slower (ratio x the best): no more steps of it
  std::map<int, Size> sizes_;
  bool split_ = false;
  uint64_t revision_ = 0;
};

}  // namespace crosslab::infer
