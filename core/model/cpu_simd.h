#pragma once
// Shared by the CPU kernel files (cpu_matmul.cpp, cpu_attention.cpp, cpu_elementwise.cpp): the AVX-512 and AVX2
// intrinsics and the target attributes they compile under (runtime-checked: f32KernelsAvailable /
// bf16KernelsAvailable in cpu_matmul.h, simd::avx2Available), and the few helpers they share. Internal: not for
// files that are not kernels.

// GCC 12 reports -W(maybe-)uninitialized inside immintrin.h's AVX-512 intrinsics that pass
// _mm512_undefined_*() through (a false positive). GCC judges by the location of the warning,
// here the header's lines, so the header alone is read with those two silenced.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define CROSSLAB_F32_TARGET __attribute__((target("avx512f")))
#define CROSSLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))
// The loops for CPUs with AVX2 but not AVX-512 (runtime-checked: simd::avx2Available). No
// FMA: those loops keep the portable loops' separate multiply and add, bit for bit.
#define CROSSLAB_AVX2_TARGET __attribute__((target("avx2")))

namespace crosslab::model::simd {

// For tests (detail::capKernels in cpu_matmul.h): 0 every kernel the CPU has, 1 none of the
// AVX-512 ones, 2 none at all (the portable loops).
inline std::atomic<int> kernelCap{0};

// Packed X (cpu_matmul.cpp): rows padded to a multiple of 16 (zeros) in chunks of rows; the AVX2
// packed loop's chunks (cpu_matmul_packed.cpp) hold this many rows at most.
constexpr int64_t pad16(int64_t m) { return (m + 15) / 16 * 16; }
inline constexpr int64_t kAvx2PackGroup = 32;

inline bool avx2Available() {
  static const bool available = __builtin_cpu_supports("avx2");
  return available && kernelCap.load(std::memory_order_relaxed) < 2;
}

// Eight values widened to fp32 (bf16: its bits are the float's top half).
CROSSLAB_AVX2_TARGET inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
CROSSLAB_AVX2_TARGET inline __m256 load8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// G vectors of sums over i in [0, k): out[8g, 8g + 8) = Σ_i x[i] · src.at(i, g), each lane a
// multiply then an add in i's order (no FMA: the portable loops' bits); G independent sums in
// flight, so that an add does not wait 3 cycles on the one before it. Source: a type with an
// AVX2 member `__m256 at(int64_t i, int g) const` (the LoRA expands' Bᵀ, attention's key blocks).
// `step()` runs before each i (attention paces its read-ahead there); by default nothing.
struct NoStep {
  void operator()() const {}
};
template <int G, class Source, class Step = NoStep>
CROSSLAB_AVX2_TARGET inline void broadcastSums(const Source& src, int64_t k, const float* x, float* out,
                                               const Step& step = {}) {
  __m256 acc[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    step();
    const __m256 xi = _mm256_set1_ps(x[i]);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(xi, src.at(i, g)));
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) _mm256_storeu_ps(out + 8 * g, acc[g]);
}

// Horizontal sums through memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
CROSSLAB_F32_TARGET inline float sum16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

// The first `left` of 16 lanes (all of them for 16 or more).
CROSSLAB_F32_TARGET inline __mmask16 laneMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

// c10::BFloat16's round to nearest even, 16 lanes, back in fp32: bits + 0x7FFF + (bit 16),
// upper half kept; NaN becomes 0x7FC0 (a quiet NaN), as c10 writes it.
CROSSLAB_F32_TARGET inline __m512 roundBf16x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_and_si512(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))),
                                     _mm512_set1_epi32(int32_t(0xFFFF0000u)));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FC00000)));
}

inline float bf16ToFloat(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A W or X value as fp32, whichever type the loop reads.
inline float toFloat(float v) { return v; }
inline float toFloat(uint16_t bits) { return bf16ToFloat(bits); }

// r[j][i] becomes r[i][j]: an 8x8 transpose of the rows r[0..7] (24 shuffles).
CROSSLAB_AVX2_TARGET inline void transpose8(__m256 (&r)[8]) {
  __m256 t[8], u[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// roundBf16x16's steps on 8 lanes (the AVX2 loops).
CROSSLAB_AVX2_TARGET inline __m256 roundBf16x8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))),
                                     _mm256_set1_epi32(int32_t(0xFFFF0000u)));
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)), nan);
}

// The horizontal sums of four vectors, [Σa, Σb, Σc, Σd], in 14 instructions. Each
// sum halves its vector in turn (lane l + lane l+8, then +4, +2, +1), as sum16x16 below does,
// so a row's sum has the same bits whichever of the two reduces it.
CROSSLAB_F32_TARGET inline __m128 sum16x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __mmask16 all = 0xFFFF;
  const __m512 ab = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, a, b, 0x44), _mm512_maskz_shuffle_f32x4(all, a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, c, d, 0x44), _mm512_maskz_shuffle_f32x4(all, c, d, 0xEE));
  // 128-bit block k: the kth vector's four partial sums q0..q3
  const __m512 s = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, ab, cd, 0x88), _mm512_maskz_shuffle_f32x4(all, ab, cd, 0xDD));
  const __m512 t = _mm512_add_ps(s, _mm512_maskz_permute_ps(all, s, 0x4E));  // [q0+q2, q1+q3, ...]
  const __m512 u = _mm512_add_ps(t, _mm512_maskz_permute_ps(all, t, 0xB1));  // lane 0: (q0+q2)+(q1+q3)
  const __m512i lanes = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_maskz_permutexvar_ps(all, lanes, u));
}

// The horizontal sums of sixteen vectors as one: lane i = Σ v[i], in 45 shuffles and adds (a
// transposing tree: lanes paired 8 apart, then 4, 2 and 1), against sum16x4's 14 per four.
CROSSLAB_F32_TARGET inline __m512 sum16x16(const __m512 (&v)[16]) {
  const __mmask16 all = 0xFFFF;
  // the tree leaves lane 4k + j holding the inputs' (4j + k)th sum: feed it transposed
  __m512 a[16];
#pragma GCC unroll 16
  for (int m = 0; m < 16; ++m) a[m] = v[(m % 4) * 4 + m / 4];
  __m512 b[8], c[4], d[2];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p)  // 256-bit halves: [a2p's halves summed | a2p+1's]
    b[p] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, a[2 * p], a[2 * p + 1], 0x44),
                         _mm512_maskz_shuffle_f32x4(all, a[2 * p], a[2 * p + 1], 0xEE));
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p)  // 128-bit block k: a[4p + k]'s four partial sums
    c[p] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, b[2 * p], b[2 * p + 1], 0x88),
                         _mm512_maskz_shuffle_f32x4(all, b[2 * p], b[2 * p + 1], 0xDD));
#pragma GCC unroll 2
  for (int p = 0; p < 2; ++p)  // per block, two inputs' pairs interleaved
    d[p] = _mm512_add_ps(_mm512_maskz_unpacklo_ps(all, c[2 * p], c[2 * p + 1]),
                         _mm512_maskz_unpackhi_ps(all, c[2 * p], c[2 * p + 1]));
  return _mm512_add_ps(_mm512_maskz_shuffle_ps(all, d[0], d[1], 0x44), _mm512_maskz_shuffle_ps(all, d[0], d[1], 0xEE));
}

// 32 bf16 values from p; lanes past `valid` read as zero.
CROSSLAB_BF16_TARGET inline __m512bh load32(const uint16_t* p, int64_t valid) {
  if (valid >= 32) return (__m512bh)_mm512_loadu_si512(p);
  const __mmask32 mask = valid <= 0 ? 0 : (__mmask32)((1ull << valid) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// 16 bf16 values widened to fp32 (exact: bf16 is fp32's upper half); lanes past `valid` zero.
CROSSLAB_BF16_TARGET inline __m512 loadBf16(const uint16_t* p, int64_t valid) {
  __m256i bits;
  if (valid >= 16) {
    bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  } else {
    alignas(32) uint16_t tail[16] = {};
    for (int64_t i = 0; i < valid; ++i) tail[i] = p[i];
    bits = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
  }
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, bits), 16));
}

CROSSLAB_BF16_TARGET inline void storeMasked(float* y, __m512 v, int64_t valid) {
  if (valid >= 16)
    _mm512_storeu_ps(y, v);
  else if (valid > 0)
    _mm512_mask_storeu_ps(y, (__mmask16)((1u << valid) - 1), v);
}

template <class T>
CROSSLAB_BF16_TARGET inline __m512 load16Any(const T* p, int64_t valid) {
  if constexpr (std::is_same_v<T, float>)
    return valid >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(valid <= 0 ? 0 : (__mmask16)((1u << valid) - 1), p);
  else
    return loadBf16(p, valid);
}

// Reading ahead in a weight matrix: addresses as integers (no pointer past an array's end is
// formed), made a pointer only for the prefetch instruction itself (which never faults).
template <class T>
inline uintptr_t aheadOf(const T* w, int64_t elements) {
  return reinterpret_cast<uintptr_t>(w) + uintptr_t(elements) * sizeof(T);
}
// The lines `elements` W values span, one more for a start not aligned to a line.
template <class T>
inline int64_t aheadLinesOf(int64_t elements) {
  return (elements * int64_t(sizeof(T)) + 63) / 64 + 1;
}
inline void prefetchLine(uintptr_t base, int64_t line) {
  _mm_prefetch(reinterpret_cast<const char*>(base + uintptr_t(line) * 64), _MM_HINT_T0);
}

}  // namespace crosslab::model::simd
