#include "core/model/gemv.h"

#include <immintrin.h>

namespace crosslab::model {
namespace {

#define CROSSLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

// 32 bf16 values from p; lanes past `valid` read as zero.
CROSSLAB_BF16_TARGET inline __m512bh load32(const uint16_t* p, int64_t valid) {
  if (valid >= 32) return (__m512bh)_mm512_loadu_si512(p);
  const __mmask32 mask = valid <= 0 ? 0 : (__mmask32)((1ull << valid) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// Horizontal sum through memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
CROSSLAB_BF16_TARGET inline float sum16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

// One row at a time, four independent accumulators along k: a single sequential stream
// keeps the hardware prefetcher ahead (measured 2.3x the bandwidth of 4 interleaved rows).
CROSSLAB_BF16_TARGET void gemvKernel(const uint16_t* w, const uint16_t* x, float* y, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = w + r * k;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 128 <= k; i += 128) {
      a0 = _mm512_dpbf16_ps(a0, load32(row + i, 32), load32(x + i, 32));
      a1 = _mm512_dpbf16_ps(a1, load32(row + i + 32, 32), load32(x + i + 32, 32));
      a2 = _mm512_dpbf16_ps(a2, load32(row + i + 64, 32), load32(x + i + 64, 32));
      a3 = _mm512_dpbf16_ps(a3, load32(row + i + 96, 32), load32(x + i + 96, 32));
    }
    for (; i < k; i += 32) a0 = _mm512_dpbf16_ps(a0, load32(row + i, k - i), load32(x + i, k - i));
    y[r] = sum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}

__attribute__((target("avx512f"))) inline __m512 loadF32(const float* p, int64_t valid) {
  if (valid >= 16) return _mm512_loadu_ps(p);
  return _mm512_maskz_loadu_ps(valid <= 0 ? 0 : (__mmask16)((1u << valid) - 1), p);
}

__attribute__((target("avx512f"))) inline float sumF32(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

__attribute__((target("avx512f"))) void f32Kernel(const float* w, const float* x, float* y, int64_t rows, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * k;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= k; i += 64) {
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i), _mm512_loadu_ps(x + i), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 16), _mm512_loadu_ps(x + i + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 32), _mm512_loadu_ps(x + i + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 48), _mm512_loadu_ps(x + i + 48), a3);
    }
    for (; i < k; i += 16) a0 = _mm512_fmadd_ps(loadF32(row + i, k - i), loadF32(x + i, k - i), a0);
    y[r] = sumF32(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}

}  // namespace

bool f32GemvAvailable() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

void f32Gemv(const float* w, const float* x, float* y, int64_t rows, int64_t k) { f32Kernel(w, x, y, rows, k); }

bool bf16GemvAvailable() {
  static const bool available = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return available;
}

void bf16Gemv(const uint16_t* w, const uint16_t* x, float* y, int64_t rows, int64_t k) { gemvKernel(w, x, y, rows, k); }

}  // namespace crosslab::model
