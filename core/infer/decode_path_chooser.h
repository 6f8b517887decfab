#pragma once
// Which decode path the batch scheduler runs for a batch of n rows: the fused CPU step
// (core/model/llama_decode_cpu.cpp), the same step with its rows split into one group per
// thread (each group through every layer on its own: LlamaModel::setDecodeSplit), or the
// op-by-op ATen path. Which is faster depends on
// the model, the dtype, the machine and n (the fused step wins at small n on small models;
// a large batch of a large model can favour ATen's GEMMs), so the scheduler measures: each
// path is tried a few times at each batch size, the paths taking turns, then the faster one
// (its best step time, robust to other processes' interference) runs, and all are measured again after 64,
// 128, 256 … steps of that size: the first choice is made while requests are still arriving
// (a serving run's HTTP threads busiest, which slows the split step most), so it is confirmed
// soon, in the steady state, and then ever less often. The split is tried only where it can split (2+ threads,
// 2+ rows). Torch-free; the scheduler thread owns it.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace crosslab::infer {

enum class DecodePath { Fused, OpByOp, FusedSplit };
const char* decodePathName(DecodePath p);  // "fused", "op-by-op", "fused-split"

class DecodePathChooser {
 public:
  static constexpr int kTries = 4;            // timed steps per path before choosing (best of 4: one
                                              // noisy step among 2 picked the slower path at c=8)
  static constexpr uint64_t kRecheck = 64;    // steps of one size before the first re-check
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
    std::array<int, kPaths> tries{};
    uint64_t used = 0, recheckAt = kRecheck;
  };
  size_t candidates(int rows) const { return split_ && rows >= 2 ? 3 : 2; }
  DecodePath fastest(int rows, const Size& s) const;
  std::map<int, Size> sizes_;
  bool split_ = false;
  uint64_t revision_ = 0;
};

}  // namespace crosslab::infer
