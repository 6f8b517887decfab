#include "core/infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <climits>
#include <stdexcept>

// GCC 12 reports -W(maybe-)uninitialized inside immintrin.h's AVX-512 intrinsics (a false
// positive, by the header's lines): the header alone is read with those two silenced, as in
// core/model/cpu_simd.h.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace crosslab::infer {

namespace {

// The forward scan from `from` on, `best` the index kept so far.
int64_t argmaxScalar(const float* v, int64_t n, int64_t from, int64_t best) {
  for (int64_t i = from; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

// The kernels' lanes merged: each lane's maximum and the index where it first appeared, the
// largest value and, among equal values, the smaller index (the forward scan's answer).
int64_t firstOfMaxima(const float* lanes, const int32_t* where, int count) {
  int64_t r = where[0];
  float m = lanes[0];
  for (int l = 1; l < count; ++l)
    if (lanes[l] > m || (lanes[l] == m && where[l] < r)) {
      m = lanes[l];
      r = where[l];
    }
  return r;
}

// Greedy sampling scans a row of 128K logits per token on a Llama 3 vocabulary (71 µs one by
// one, 15 µs here). Per lane the running maximum and the index where it first appeared
// (strictly greater replaces), then the lanes merged by value and, among equal values, the
// smaller index: the forward scan's answer. A NaN anywhere hands the row to the scalar scan
// (whose answer then depends on where the NaN is); the tail after the last full vector is
// scanned on from there.
__attribute__((target("avx512f"))) int64_t argmaxKernel(const float* v, int64_t n) {
  // Four vectors, each lane over every 64th value from its own (as the AVX2 loop below): four
  // running maxima that do not wait on each other. With one vector each compare waited on the
  // blend before it: `tiny` in bf16 spent 12-13% of its steps here at 8 streams and 17-18% at 32
  // (batch_bench's sampling share), 5% and 10-12% with four.
  constexpr int kVectors = 4;
  __m512 best[kVectors];
  __m512i bestIdx[kVectors], idx[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    best[j] = _mm512_set1_ps(-INFINITY);
    bestIdx[j] = _mm512_setzero_si512();
    idx[j] = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32(16 * j));
  }
  const __m512i step = _mm512_set1_epi32(16 * kVectors);
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 16 * kVectors <= n; i += 16 * kVectors)
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      const __m512 x = _mm512_loadu_ps(v + i + 16 * j);
      nan = __mmask16(nan | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
      const __mmask16 gt = _mm512_cmp_ps_mask(x, best[j], _CMP_GT_OQ);
      best[j] = _mm512_mask_mov_ps(best[j], gt, x);
      bestIdx[j] = _mm512_mask_mov_epi32(bestIdx[j], gt, idx[j]);
      idx[j] = _mm512_add_epi32(idx[j], step);
    }
  if (nan) return argmaxScalar(v, n, 1, 0);
  alignas(64) float lanes[16 * kVectors];
  alignas(64) int32_t where[16 * kVectors];
  for (int j = 0; j < kVectors; ++j) {
    _mm512_store_ps(lanes + 16 * j, best[j]);
    _mm512_store_si512(reinterpret_cast<__m512i*>(where + 16 * j), bestIdx[j]);
  }
  return argmaxScalar(v, n, i, firstOfMaxima(lanes, where, 16 * kVectors));
}

// The same on AVX2 (no AVX-512), four vectors of eight lanes, each lane over every 32nd value
// from its own: four running maxima that do not wait on each other (one compare and blend a
// step: 3-4 cycles in a chain). Merged as above, by value and then the smaller index, the
// forward scan's answer. On this project's AVX2-only VM `tiny` spent 18-24% of each decode step
// at 8 to 32 streams in the scalar scan, 4-8% here (batch_bench).
__attribute__((target("avx2"))) int64_t argmaxAvx2(const float* v, int64_t n) {
  constexpr int kVectors = 4;
  __m256 best[kVectors];
  __m256i bestIdx[kVectors], idx[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    best[j] = _mm256_set1_ps(-INFINITY);
    bestIdx[j] = _mm256_setzero_si256();
    idx[j] = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * j));
  }
  const __m256i step = _mm256_set1_epi32(8 * kVectors);
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 * kVectors <= n; i += 8 * kVectors)
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      const __m256 x = _mm256_loadu_ps(v + i + 8 * j);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
      const __m256 gt = _mm256_cmp_ps(x, best[j], _CMP_GT_OQ);
      best[j] = _mm256_blendv_ps(best[j], x, gt);
      bestIdx[j] = _mm256_blendv_epi8(bestIdx[j], idx[j], _mm256_castps_si256(gt));
      idx[j] = _mm256_add_epi32(idx[j], step);
    }
  if (_mm256_movemask_ps(nan)) return argmaxScalar(v, n, 1, 0);
  alignas(32) float lanes[8 * kVectors];
  alignas(32) int32_t where[8 * kVectors];
  for (int j = 0; j < kVectors; ++j) {
    _mm256_store_ps(lanes + 8 * j, best[j]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(where + 8 * j), bestIdx[j]);
  }
  return argmaxScalar(v, n, i, firstOfMaxima(lanes, where, 8 * kVectors));
}

}  // namespace

namespace detail {
int32_t argmaxOn(ArgmaxPath path, const float* logits, size_t n) {
  if (n <= 1) return 0;
  // the kernels' lanes count positions in 32 bits
  if (path == ArgmaxPath::Scalar || n < 32 || n > size_t(INT32_MAX))
    return static_cast<int32_t>(argmaxScalar(logits, int64_t(n), 1, 0));
  return static_cast<int32_t>(path == ArgmaxPath::Avx512 ? argmaxKernel(logits, int64_t(n))
                                                         : argmaxAvx2(logits, int64_t(n)));
}
}  // namespace detail

int32_t argmax(const float* logits, size_t n) {
  static const detail::ArgmaxPath path = __builtin_cpu_supports("avx512f") ? detail::ArgmaxPath::Avx512
                                         : __builtin_cpu_supports("avx2")  ? detail::ArgmaxPath::Avx2
                                                                           : detail::ArgmaxPath::Scalar;
  return detail::argmaxOn(path, logits, n);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  if (params.temperature < 0) throw std::invalid_argument("temperature must be >= 0");
  if (params.topP <= 0 || params.topP > 1) throw std::invalid_argument("top-p must be in (0, 1]");
  if (params.topK < 0) throw std::invalid_argument("top-k must be >= 0");
}

int32_t Sampler::sample(const float* logits, size_t n) {
  if (params_.temperature == 0.0 || params_.topK == 1) return argmax(logits, n);
  scratch_.resize(n);
  for (size_t i = 0; i < n; ++i) scratch_[i] = {logits[i], static_cast<int32_t>(i)};
  const auto byScore = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = n;
  if (params_.topK > 0 && size_t(params_.topK) < n) {
    keep = size_t(params_.topK);
    std::partial_sort(scratch_.begin(), scratch_.begin() + std::ptrdiff_t(keep), scratch_.end(), byScore);
  } else {
    std::sort(scratch_.begin(), scratch_.end(), byScore);
  }
  // Softmax over the kept scores at the temperature (double for a stable sum).
  std::vector<double> p(keep);
  const double maxScore = scratch_[0].first;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp((scratch_[i].first - maxScore) / params_.temperature);
  // Top-p: the smallest prefix whose mass reaches p (at least one token).
  if (params_.topP < 1.0) {
    double cum = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += p[i] / sum;
      if (cum >= params_.topP) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += p[i];
  }
  std::uniform_real_distribution<double> uniform(0.0, sum);
  double r = uniform(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r <= 0) return scratch_[i].second;
  }
  return scratch_[keep - 1].second;
}

}  // namespace crosslab::infer
