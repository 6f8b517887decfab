// The fused decode step's elementwise steps (core/model/cpu_elementwise.h): AVX-512 where the
// CPU has it (the same check as the f32 matmul kernels), AVX2 loops where it has only that, a
// scalar loop computing the same values otherwise (and each AVX2 loop's last n % 8 values).
#include "core/model/cpu_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/cpu_matmul.h"
#include "core/model/cpu_simd.h"

namespace crosslab::model {
namespace {

using simd::laneMask;
using simd::roundBf16x16;
using simd::sum16;

// e^x, 16 lanes: x = n ln2 + r, |r| <= ln2/2, e^r by Cephes' expf polynomial (about 1 ulp),
// times 2^n. Below -87.3 (-inf too) the result is ~1e-38 instead of smaller (0 for every use
// here); above 88.7, +inf as expf; NaN for NaN.
CROSSLAB_F32_TARGET inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x);  // x second: a NaN stays NaN
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// silu(g) = g / (1 + e^-g), in place.
CROSSLAB_F32_TARGET void siluKernel(float* g, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(mask, g + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_mask_storeu_ps(g + i, mask, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  }
}

CROSSLAB_F32_TARGET float expShiftedKernel(float* s, int64_t len, float shift) {
  __m512 sum = _mm512_setzero_ps();
  const __m512 m = _mm512_set1_ps(shift);
  int64_t t = 0;
  for (; t + 16 <= len; t += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + t), m));
    _mm512_storeu_ps(s + t, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (t < len) {
    const __mmask16 mask = (__mmask16)((1u << (len - t)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(mask, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, s + t), m)));
    _mm512_mask_storeu_ps(s + t, mask, e);
    sum = _mm512_add_ps(sum, e);
  }
  return sum16(sum);
}

template <bool B>
CROSSLAB_F32_TARGET inline __m512 maybeRound(__m512 x) {
  if constexpr (B) return roundBf16x16(x);
  else return x;
}

CROSSLAB_F32_TARGET void roundBf16Kernel(float* v, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    _mm512_mask_storeu_ps(v + i, m, roundBf16x16(_mm512_maskz_loadu_ps(m, v + i)));
  }
}

template <bool B>
CROSSLAB_F32_TARGET float scaleRoundMaxKernel(float* s, int64_t len, float scale) {
  // per lane std::max(mx, v) = mx < v ? v : mx, then the lanes in order, as the scalar loop
  __m512 mx = _mm512_set1_ps(-INFINITY);
  const __m512 sc = _mm512_set1_ps(scale);
  for (int64_t t = 0; t < len; t += 16) {
    const __mmask16 m = laneMask(len - t);
    const __m512 v = maybeRound<B>(_mm512_mul_ps(maybeRound<B>(_mm512_maskz_loadu_ps(m, s + t)), sc));
    _mm512_mask_storeu_ps(s + t, m, v);
    mx = _mm512_mask_mov_ps(mx, _mm512_mask_cmp_ps_mask(m, mx, v, _CMP_LT_OQ), v);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, mx);
  float best = -INFINITY;
  for (float l : lanes) best = std::max(best, l);
  return best;
}

template <bool B>
CROSSLAB_F32_TARGET void divideRoundKernel(float* s, int64_t len, float d) {
  const __m512 dv = _mm512_set1_ps(d);
  for (int64_t t = 0; t < len; t += 16) {
    const __mmask16 m = laneMask(len - t);
    _mm512_mask_storeu_ps(s + t, m, maybeRound<B>(_mm512_div_ps(_mm512_maskz_loadu_ps(m, s + t), dv)));
  }
}

template <bool B, bool RoundY>
CROSSLAB_F32_TARGET void addRoundKernel(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
    if constexpr (RoundY) yv = maybeRound<B>(yv);
    _mm512_mask_storeu_ps(x + i, m, maybeRound<B>(_mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), yv)));
  }
}

template <bool B>
CROSSLAB_F32_TARGET void mulRoundKernel(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    const __m512 gv = maybeRound<B>(_mm512_maskz_loadu_ps(m, g + i));
    _mm512_mask_storeu_ps(g + i, m, maybeRound<B>(_mm512_mul_ps(gv, _mm512_maskz_loadu_ps(m, u + i))));
  }
}

// 16 weights from `valid` on as fp32 (lanes past it zero): fp32 as they are, bf16 bits widened.
CROSSLAB_F32_TARGET inline __m512 loadWeights(const float* w, int64_t valid) { return _mm512_maskz_loadu_ps(laneMask(valid), w); }
CROSSLAB_F32_TARGET inline __m512 loadWeights(const uint16_t* w, int64_t valid) {
  __m256i wb;
  if (valid >= 16) {
    wb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  } else {  // the tail, through a zeroed copy (masked 16-bit loads need AVX512BW+VL)
    alignas(32) uint16_t tail[16] = {};
    std::memcpy(tail, w, sizeof(uint16_t) * size_t(valid));
    wb = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
  }
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(wb), 16));
}

template <bool B, class W>
CROSSLAB_F32_TARGET void normRoundKernel(const float* x, float inv, const W* w, float* out, int64_t n) {
  const __m512 iv = _mm512_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    const __m512 t = maybeRound<B>(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), iv));
    _mm512_mask_storeu_ps(out + i, m, maybeRound<B>(_mm512_mul_ps(loadWeights(w + i, n - i), t)));
  }
}

template <bool B>
CROSSLAB_F32_TARGET void ropeRoundKernel(float* v, const float* cs, const float* sn, int64_t half) {
  for (int64_t i = 0; i < half; i += 16) {
    const __mmask16 m = laneMask(half - i);
    const __m512 a = _mm512_maskz_loadu_ps(m, v + i), b = _mm512_maskz_loadu_ps(m, v + half + i);
    const __m512 c = _mm512_maskz_loadu_ps(m, cs + i), s = _mm512_maskz_loadu_ps(m, sn + i);
    // -b as the scalar code and ATen negate: the sign bit flipped (0 - b would make -(+0) +0)
    const __m512 nb = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(b), _mm512_set1_epi32(int32_t(0x80000000u))));
    const __m512 lo = maybeRound<B>(_mm512_add_ps(maybeRound<B>(_mm512_mul_ps(a, c)), maybeRound<B>(_mm512_mul_ps(nb, s))));
    const __m512 hi = maybeRound<B>(_mm512_add_ps(maybeRound<B>(_mm512_mul_ps(b, c)), maybeRound<B>(_mm512_mul_ps(a, s))));
    _mm512_mask_storeu_ps(v + i, m, lo);
    _mm512_mask_storeu_ps(v + half + i, m, hi);
  }
}

CROSSLAB_F32_TARGET void toBf16BitsKernel(const float* v, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    const __m512i bits = _mm512_srli_epi32(_mm512_castps_si512(roundBf16x16(_mm512_maskz_loadu_ps(m, v + i))), 16);
    _mm512_mask_cvtepi32_storeu_epi16(out + i, m, bits);
  }
}

CROSSLAB_F32_TARGET double sumSquaresKernel(const float* x, int64_t n) {
  // lane j sums x[j], x[j + 8], x[j + 16], … in that order (as the scalar loop's p[j])
  __m512d acc = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(laneMask(n - i), x + i);  // zeros past the end add nothing
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    acc = _mm512_fmadd_pd(lo, lo, acc);  // one rounding, as the scalar += of an exact square
    acc = _mm512_fmadd_pd(hi, hi, acc);
  }
  alignas(64) double t[8];
  _mm512_store_pd(t, acc);
  double s = 0;
  for (double l : t) s += l;
  return s;
}

// ---- AVX2 (no AVX-512): eight lanes, the same operations as the scalar loops in the same
// order (no FMA), so every rounding step gives the scalar loop's bits; a row's last n % 8
// values go through the scalar loop itself. exp (softmax, silu) is a polynomial, as above.

using simd::avx2Available;

using simd::roundBf16x8;

template <bool B>
CROSSLAB_AVX2_TARGET inline __m256 maybeRound8(__m256 x) {
  if constexpr (B) return roundBf16x8(x);
  else return x;
}

// 2^e for integer lanes e in [-126, 127]: the exponent field.
CROSSLAB_AVX2_TARGET inline __m256 pow2(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

// e^x, 8 lanes: exp16's reduction and polynomial with a separate multiply and add (Cephes'
// split of ln 2 keeps n·C1 exact without FMA). x is held in [-87.3, 88.8]; 2^n is applied in
// two halves so that n = 128 (x past ln FLT_MAX) overflows to +inf as expf does.
CROSSLAB_AVX2_TARGET inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.8f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));  // x second: a NaN stays NaN
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(-2.12194440e-4f)));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n);  // -126 … 128
  const __m256i half = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(half)), pow2(_mm256_sub_epi32(ni, half)));
}

CROSSLAB_AVX2_TARGET void siluAvx2(float* g, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(g + i);
    _mm256_storeu_ps(g + i, _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), v)))));
  }
}

CROSSLAB_AVX2_TARGET float expShiftedAvx2(float* s, int64_t len, float shift) {
  __m256 sum = _mm256_setzero_ps();
  const __m256 m = _mm256_set1_ps(shift);
  for (int64_t t = 0; t + 8 <= len; t += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + t), m));
    _mm256_storeu_ps(s + t, e);
    sum = _mm256_add_ps(sum, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float l : lanes) total += l;
  return total;
}

CROSSLAB_AVX2_TARGET void roundBf16Avx2(float* v, int64_t n) {
  for (int64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, roundBf16x8(_mm256_loadu_ps(v + i)));
}

// The lanes' maxima (per lane mx < v ? v : mx, as std::max); the caller merges them in lane
// order with the tail's values.
template <bool B>
CROSSLAB_AVX2_TARGET float scaleRoundMaxAvx2(float* s, int64_t len, float scale) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  const __m256 sc = _mm256_set1_ps(scale);
  for (int64_t t = 0; t + 8 <= len; t += 8) {
    const __m256 v = maybeRound8<B>(_mm256_mul_ps(maybeRound8<B>(_mm256_loadu_ps(s + t)), sc));
    _mm256_storeu_ps(s + t, v);
    mx = _mm256_blendv_ps(mx, v, _mm256_cmp_ps(mx, v, _CMP_LT_OQ));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx);
  float best = -INFINITY;
  for (float l : lanes) best = std::max(best, l);
  return best;
}

template <bool B>
CROSSLAB_AVX2_TARGET void divideRoundAvx2(float* s, int64_t len, float d) {
  const __m256 dv = _mm256_set1_ps(d);
  for (int64_t t = 0; t + 8 <= len; t += 8) _mm256_storeu_ps(s + t, maybeRound8<B>(_mm256_div_ps(_mm256_loadu_ps(s + t), dv)));
}

template <bool B, bool RoundY>
CROSSLAB_AVX2_TARGET void addRoundAvx2(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    __m256 yv = _mm256_loadu_ps(y + i);
    if constexpr (RoundY) yv = maybeRound8<B>(yv);
    _mm256_storeu_ps(x + i, maybeRound8<B>(_mm256_add_ps(_mm256_loadu_ps(x + i), yv)));
  }
}

template <bool B>
CROSSLAB_AVX2_TARGET void mulRoundAvx2(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(g + i, maybeRound8<B>(_mm256_mul_ps(maybeRound8<B>(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i))));
}

template <bool B, class W>
CROSSLAB_AVX2_TARGET void normRoundAvx2(const float* x, float inv, const W* w, float* out, int64_t n) {
  const __m256 iv = _mm256_set1_ps(inv);
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const __m256 t = maybeRound8<B>(_mm256_mul_ps(_mm256_loadu_ps(x + i), iv));
    _mm256_storeu_ps(out + i, maybeRound8<B>(_mm256_mul_ps(simd::load8(w + i), t)));
  }
}

template <bool B>
CROSSLAB_AVX2_TARGET void ropeRoundAvx2(float* v, const float* cs, const float* sn, int64_t half) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(int32_t(0x80000000u)));
  for (int64_t i = 0; i + 8 <= half; i += 8) {
    const __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + half + i);
    const __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
    const __m256 nb = _mm256_xor_ps(b, sign);  // -b: the sign bit flipped, as the scalar negate
    const __m256 lo = maybeRound8<B>(_mm256_add_ps(maybeRound8<B>(_mm256_mul_ps(a, c)), maybeRound8<B>(_mm256_mul_ps(nb, s))));
    const __m256 hi = maybeRound8<B>(_mm256_add_ps(maybeRound8<B>(_mm256_mul_ps(b, c)), maybeRound8<B>(_mm256_mul_ps(a, s))));
    _mm256_storeu_ps(v + i, lo);
    _mm256_storeu_ps(v + half + i, hi);
  }
}

CROSSLAB_AVX2_TARGET void toBf16BitsAvx2(const float* v, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_srli_epi32(_mm256_castps_si256(roundBf16x8(_mm256_loadu_ps(v + i))), 16);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));  // ≤ 0xFFFF: exact
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
}

// p[j] += x[i]² for i = j, j + 8, … (the scalar loop's partial sums: exact squares in double,
// one rounding per add), over the whole blocks of eight.
CROSSLAB_AVX2_TARGET void sumSquaresAvx2(const float* x, int64_t n, double (&p)[8]) {
  __m256d lo = _mm256_loadu_pd(p), hi = _mm256_loadu_pd(p + 4);
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
    hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
  }
  _mm256_storeu_pd(p, lo);
  _mm256_storeu_pd(p + 4, hi);
}

}  // namespace

namespace {

uint16_t bf16BitsScalar(float x) {  // c10::BFloat16(x).x
  if (std::isnan(x)) return uint16_t(0x7FC0);
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += ((u >> 16) & 1) + 0x7FFFu;
  return uint16_t(u >> 16);
}
float roundBf16Scalar(float x) { return simd::bf16ToFloat(bf16BitsScalar(x)); }  // c10::BFloat16(x), back to float
float maybeRoundScalar(float x, bool bf16) { return bf16 ? roundBf16Scalar(x) : x; }
float weightValue(float w) { return w; }
float weightValue(uint16_t w) { return simd::bf16ToFloat(w); }

// Which loops run: the AVX-512 kernels, the AVX2 loops or the portable loop (tests may ask for
// a slower one: detail::capKernels in cpu_matmul.h).
enum class Path { Avx512, Avx2, Portable };
Path path() { return f32KernelsAvailable() ? Path::Avx512 : avx2Available() ? Path::Avx2 : Path::Portable; }

// Where the portable loop takes over after the AVX2 loops: past their whole blocks of eight.
int64_t avx2Done(int64_t n) { return n / 8 * 8; }

template <class W>
void normRoundAny(const float* x, float inv, const W* w, float* out, int64_t n, bool bf16) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return bf16 ? normRoundKernel<true>(x, inv, w, out, n) : normRoundKernel<false>(x, inv, w, out, n);
    case Path::Avx2:
      bf16 ? normRoundAvx2<true>(x, inv, w, out, n) : normRoundAvx2<false>(x, inv, w, out, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) out[i] = maybeRoundScalar(weightValue(w[i]) * maybeRoundScalar(x[i] * inv, bf16), bf16);
}

}  // namespace

void roundBf16(float* v, int64_t n) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return roundBf16Kernel(v, n);
    case Path::Avx2:
      roundBf16Avx2(v, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) v[i] = roundBf16Scalar(v[i]);
}

namespace {

float scaleRoundMaxAny(float* s, int64_t len, float scale, bool bf16) {
  float mx = -INFINITY;
  int64_t t = 0;
  switch (path()) {
    case Path::Avx512: return bf16 ? scaleRoundMaxKernel<true>(s, len, scale) : scaleRoundMaxKernel<false>(s, len, scale);
    case Path::Avx2:
      mx = bf16 ? scaleRoundMaxAvx2<true>(s, len, scale) : scaleRoundMaxAvx2<false>(s, len, scale);
      t = avx2Done(len);
      break;
    case Path::Portable: break;
  }
  for (; t < len; ++t) mx = std::max(mx, s[t] = maybeRoundScalar(maybeRoundScalar(s[t], bf16) * scale, bf16));
  return mx;
}

}  // namespace

// The vector loops keep each lane's first maximum and merge the lanes in lane order: the
// sequential loop's value, but for a maximum of zero its sign may be another zero's. The
// sequential loop keeps the first of equal values: the first zero's sign.
float scaleRoundMax(float* s, int64_t len, float scale, bool bf16) {
  float mx = scaleRoundMaxAny(s, len, scale, bf16);
  if (mx == 0.0f && path() != Path::Portable)
    for (int64_t t = 0; t < len; ++t)
      if (s[t] == 0.0f) {
        mx = s[t];
        break;
      }
  return mx;
}

void divideRound(float* s, int64_t len, float d, bool bf16) {
  int64_t t = 0;
  switch (path()) {
    case Path::Avx512: return bf16 ? divideRoundKernel<true>(s, len, d) : divideRoundKernel<false>(s, len, d);
    case Path::Avx2:
      bf16 ? divideRoundAvx2<true>(s, len, d) : divideRoundAvx2<false>(s, len, d);
      t = avx2Done(len);
      break;
    case Path::Portable: break;
  }
  for (; t < len; ++t) s[t] = maybeRoundScalar(s[t] / d, bf16);
}

void addRound(float* x, const float* y, int64_t n, bool roundY, bool bf16) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512:
      if (!bf16) return addRoundKernel<false, false>(x, y, n);
      return roundY ? addRoundKernel<true, true>(x, y, n) : addRoundKernel<true, false>(x, y, n);
    case Path::Avx2:
      if (!bf16) addRoundAvx2<false, false>(x, y, n);
      else if (roundY) addRoundAvx2<true, true>(x, y, n);
      else addRoundAvx2<true, false>(x, y, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) x[i] = maybeRoundScalar(x[i] + (roundY ? maybeRoundScalar(y[i], bf16) : y[i]), bf16);
}

void mulRound(float* g, const float* u, int64_t n, bool bf16) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return bf16 ? mulRoundKernel<true>(g, u, n) : mulRoundKernel<false>(g, u, n);
    case Path::Avx2:
      bf16 ? mulRoundAvx2<true>(g, u, n) : mulRoundAvx2<false>(g, u, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) g[i] = maybeRoundScalar(maybeRoundScalar(g[i], bf16) * u[i], bf16);
}

void normRound(const float* x, float inv, const float* w, float* out, int64_t n, bool bf16) {
  normRoundAny(x, inv, w, out, n, bf16);
}
void normRound(const float* x, float inv, const uint16_t* w, float* out, int64_t n, bool bf16) {
  normRoundAny(x, inv, w, out, n, bf16);
}

void ropeRound(float* v, const float* cos, const float* sin, int64_t half, bool bf16) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return bf16 ? ropeRoundKernel<true>(v, cos, sin, half) : ropeRoundKernel<false>(v, cos, sin, half);
    case Path::Avx2:
      bf16 ? ropeRoundAvx2<true>(v, cos, sin, half) : ropeRoundAvx2<false>(v, cos, sin, half);
      i = avx2Done(half);
      break;
    case Path::Portable: break;
  }
  for (; i < half; ++i) {
    const float a = v[i], b = v[i + half], cs = cos[i], sn = sin[i];
    v[i] = maybeRoundScalar(maybeRoundScalar(a * cs, bf16) + maybeRoundScalar(-b * sn, bf16), bf16);
    v[i + half] = maybeRoundScalar(maybeRoundScalar(b * cs, bf16) + maybeRoundScalar(a * sn, bf16), bf16);
  }
}

void toBf16Bits(const float* v, uint16_t* out, int64_t n) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return toBf16BitsKernel(v, out, n);
    case Path::Avx2:
      toBf16BitsAvx2(v, out, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) out[i] = bf16BitsScalar(v[i]);
}

double sumSquares(const float* x, int64_t n) {
  double p[8] = {};
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return sumSquaresKernel(x, n);
    case Path::Avx2:
      sumSquaresAvx2(x, n, p);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) p[i % 8] += double(x[i]) * double(x[i]);
  double s = 0;
  for (double l : p) s += l;
  return s;
}

float expShifted(float* s, int64_t len, float shift) {
  float sum = 0;
  int64_t t = 0;
  switch (path()) {
    case Path::Avx512: return expShiftedKernel(s, len, shift);
    case Path::Avx2:
      sum = expShiftedAvx2(s, len, shift);
      t = avx2Done(len);
      break;
    case Path::Portable: break;
  }
  for (; t < len; ++t) sum += (s[t] = std::exp(s[t] - shift));
  return sum;
}

void siluInPlace(float* g, int64_t n) {
  int64_t i = 0;
  switch (path()) {
    case Path::Avx512: return siluKernel(g, n);
    case Path::Avx2:
      siluAvx2(g, n);
      i = avx2Done(n);
      break;
    case Path::Portable: break;
  }
  for (; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i]));
}

}  // namespace crosslab::model
