#pragma once
// Picks the next token from a row of logits: greedy, or temperature / top-k / top-p
// sampling from a seeded generator (same seed, same logits -> same choices).

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace crosslab::infer {

struct SamplingParams {
  double temperature = 0.0;  // 0 = greedy (argmax)
  int topK = 0;              // 0 = off
  double topP = 1.0;         // 1 = off
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // `logits`: [n] fp32 scores of one position. Returns the chosen id.
  int32_t sample(const float* logits, size_t n);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;
};

// The first index of the maximum, as torch.argmax: the index a forward scan keeping the first
// strictly greater value finds (NaNs never chosen, but index 0 when logits[0] is NaN; 0 for
// n <= 1). AVX-512 where the CPU has it, else AVX2 where it has that.
int32_t argmax(const float* logits, size_t n);

namespace detail {
// For tests: argmax on a given path (Avx512 and Avx2 only where the CPU has them).
enum class ArgmaxPath { Avx512, Avx2, Scalar };
int32_t argmaxOn(ArgmaxPath path, const float* logits, size_t n);
}  // namespace detail

}  // namespace crosslab::infer
