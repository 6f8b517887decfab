#include "core/model/cpu_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace crosslab::model {
namespace {

// Packed X (n >= 8): chunks of up to kChunk rows, each padded to a multiple of 16 rows (zeros).
//   f32:  element (i, b) of a chunk at  i * npad + b
//   bf16: element (i, b) of a chunk at  ((i / 2) * npad + b) * 2 + i % 2   (dpbf16 takes pairs along k)
constexpr int64_t kChunk = 64;
constexpr int64_t kPackFrom = 8;

int64_t pad16(int64_t m) { return (m + 15) / 16 * 16; }
int64_t pairs(int64_t k) { return (k + 1) / 2; }

#define CROSSLAB_F32_TARGET __attribute__((target("avx512f")))
#define CROSSLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

// Horizontal sums through memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
CROSSLAB_F32_TARGET inline float sum16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

// Writes the 16 lanes of `acc` (16 X rows, one W row) into Y's column, rows past `valid` dropped.
CROSSLAB_F32_TARGET inline void storeColumn(__m512 acc, float* y, int64_t ldy, int64_t valid) {
  alignas(64) float t[16];
  _mm512_store_ps(t, acc);
  for (int64_t l = 0; l < std::min<int64_t>(16, valid); ++l) y[l * ldy] = t[l];
}

// ---- bf16 ----------------------------------------------------------------------------

// 32 bf16 values from p; lanes past `valid` read as zero.
CROSSLAB_BF16_TARGET inline __m512bh load32(const uint16_t* p, int64_t valid) {
  if (valid >= 32) return (__m512bh)_mm512_loadu_si512(p);
  const __mmask32 mask = valid <= 0 ? 0 : (__mmask32)((1ull << valid) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// n = 1: one row at a time, four accumulators along k.
CROSSLAB_BF16_TARGET void bf16Gemv(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, float* y) {
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

// 2 <= n < 8: each W row against NX (<= 4) X rows, two accumulators per X row along k.
template <int NX>
CROSSLAB_BF16_TARGET void bf16RowTile(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, float* y,
                                      int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = w + r * k;
    __m512 a[NX], b[NX];
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) a[j] = b[j] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= k; i += 64) {
      const __m512bh w0 = load32(row + i, 32), w1 = load32(row + i + 32, 32);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) {
        a[j] = _mm512_dpbf16_ps(a[j], w0, load32(x + j * k + i, 32));
        b[j] = _mm512_dpbf16_ps(b[j], w1, load32(x + j * k + i + 32, 32));
      }
    }
    for (; i < k; i += 32) {
      const __m512bh w0 = load32(row + i, k - i);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) a[j] = _mm512_dpbf16_ps(a[j], w0, load32(x + j * k + i, k - i));
    }
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) y[j * ldy + r] = sum16(_mm512_add_ps(a[j], b[j]));
  }
}

CROSSLAB_BF16_TARGET void bf16RowTiles(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, int64_t n,
                                       float* y, int64_t ldy) {
  for (int64_t j = 0; j < n; j += 4) {
    const uint16_t* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: bf16RowTile<4>(w, rows, k, xj, yj, ldy); break;
      case 3: bf16RowTile<3>(w, rows, k, xj, yj, ldy); break;
      case 2: bf16RowTile<2>(w, rows, k, xj, yj, ldy); break;
      default: bf16RowTile<1>(w, rows, k, xj, yj, ldy); break;
    }
  }
}

// n >= 8, one chunk of m <= 64 X rows packed (NV = npad / 16 vectors per k pair): NW W rows
// at a time, each pair of W values broadcast against the NV vectors.
template <int NW, int NV>
CROSSLAB_BF16_TARGET void bf16PackedTile(const uint16_t* w, int64_t k, const uint16_t* xp, int64_t m, float* y,
                                         int64_t ldy) {
  constexpr int64_t npad = 16 * NV;
  __m512 acc[NW][NV];
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  const int64_t fullPairs = k / 2;
  for (int64_t p = 0; p < fullPairs; ++p) {
    __m512bh xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = (__m512bh)_mm512_loadu_si512(xp + (p * npad + v * 16) * 2);
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r) {
      int32_t pair;
      std::memcpy(&pair, w + r * k + 2 * p, sizeof pair);
      const __m512bh wb = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], wb, xv[v]);
    }
  }
  if (k % 2) {  // the last k alone: its pair's second half is zero in the packed X
    const int64_t p = fullPairs;
    __m512bh xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = (__m512bh)_mm512_loadu_si512(xp + (p * npad + v * 16) * 2);
    for (int r = 0; r < NW; ++r) {
      const __m512bh wb = (__m512bh)_mm512_set1_epi32(int32_t(w[r * k + k - 1]));
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], wb, xv[v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) storeColumn(acc[r][v], y + v * 16 * ldy + r, ldy, m - v * 16);
}

template <int NW, int NV>
CROSSLAB_BF16_TARGET void bf16PackedRows(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* xp, int64_t m,
                                         float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + NW <= rows; r += NW) bf16PackedTile<NW, NV>(w + r * k, k, xp, m, y + r, ldy);
  for (; r < rows; ++r) bf16PackedTile<1, NV>(w + r * k, k, xp, m, y + r, ldy);
}

CROSSLAB_BF16_TARGET void bf16Packed(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y,
                                     int64_t ldy) {
  const int64_t k = x.k;
  for (int64_t base = 0; base < x.n; base += kChunk) {
    const int64_t m = std::min(kChunk, x.n - base);
    const uint16_t* xp = x.packed.data() + (base / kChunk) * pairs(k) * kChunk * 2;
    float* yc = y + base * ldy;
    switch (pad16(m) / 16) {
      case 1: bf16PackedRows<16, 1>(w, rows, k, xp, m, yc, ldy); break;
      case 2: bf16PackedRows<8, 2>(w, rows, k, xp, m, yc, ldy); break;
      case 3: bf16PackedRows<5, 3>(w, rows, k, xp, m, yc, ldy); break;
      default: bf16PackedRows<4, 4>(w, rows, k, xp, m, yc, ldy); break;
    }
  }
}

// ---- f32 -----------------------------------------------------------------------------

CROSSLAB_F32_TARGET inline __m512 load16(const float* p, int64_t valid) {
  if (valid >= 16) return _mm512_loadu_ps(p);
  return _mm512_maskz_loadu_ps(valid <= 0 ? 0 : (__mmask16)((1u << valid) - 1), p);
}

CROSSLAB_F32_TARGET void f32Gemv(const float* w, int64_t rows, int64_t k, const float* x, float* y) {
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
    for (; i < k; i += 16) a0 = _mm512_fmadd_ps(load16(row + i, k - i), load16(x + i, k - i), a0);
    y[r] = sum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}

template <int NX>
CROSSLAB_F32_TARGET void f32RowTile(const float* w, int64_t rows, int64_t k, const float* x, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * k;
    __m512 a[NX], b[NX];
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) a[j] = b[j] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= k; i += 32) {
      const __m512 w0 = _mm512_loadu_ps(row + i), w1 = _mm512_loadu_ps(row + i + 16);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) {
        a[j] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + j * k + i), a[j]);
        b[j] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + j * k + i + 16), b[j]);
      }
    }
    for (; i < k; i += 16) {
      const __m512 w0 = load16(row + i, k - i);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) a[j] = _mm512_fmadd_ps(w0, load16(x + j * k + i, k - i), a[j]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) y[j * ldy + r] = sum16(_mm512_add_ps(a[j], b[j]));
  }
}

CROSSLAB_F32_TARGET void f32RowTiles(const float* w, int64_t rows, int64_t k, const float* x, int64_t n, float* y,
                                     int64_t ldy) {
  for (int64_t j = 0; j < n; j += 4) {
    const float* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: f32RowTile<4>(w, rows, k, xj, yj, ldy); break;
      case 3: f32RowTile<3>(w, rows, k, xj, yj, ldy); break;
      case 2: f32RowTile<2>(w, rows, k, xj, yj, ldy); break;
      default: f32RowTile<1>(w, rows, k, xj, yj, ldy); break;
    }
  }
}

template <int NW, int NV>
CROSSLAB_F32_TARGET void f32PackedTile(const float* w, int64_t k, const float* xp, int64_t m, float* y, int64_t ldy) {
  constexpr int64_t npad = 16 * NV;
  __m512 acc[NW][NV];
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    __m512 xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = _mm512_loadu_ps(xp + i * npad + v * 16);
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r) {
      const __m512 wb = _mm512_set1_ps(w[r * k + i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(wb, xv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) storeColumn(acc[r][v], y + v * 16 * ldy + r, ldy, m - v * 16);
}

template <int NW, int NV>
CROSSLAB_F32_TARGET void f32PackedRows(const float* w, int64_t rows, int64_t k, const float* xp, int64_t m, float* y,
                                       int64_t ldy) {
  int64_t r = 0;
  for (; r + NW <= rows; r += NW) f32PackedTile<NW, NV>(w + r * k, k, xp, m, y + r, ldy);
  for (; r < rows; ++r) f32PackedTile<1, NV>(w + r * k, k, xp, m, y + r, ldy);
}

CROSSLAB_F32_TARGET void f32Packed(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  const int64_t k = x.k;
  for (int64_t base = 0; base < x.n; base += kChunk) {
    const int64_t m = std::min(kChunk, x.n - base);
    const float* xp = x.packed.data() + (base / kChunk) * k * kChunk;
    float* yc = y + base * ldy;
    switch (pad16(m) / 16) {
      case 1: f32PackedRows<16, 1>(w, rows, k, xp, m, yc, ldy); break;
      case 2: f32PackedRows<8, 2>(w, rows, k, xp, m, yc, ldy); break;
      case 3: f32PackedRows<5, 3>(w, rows, k, xp, m, yc, ldy); break;
      default: f32PackedRows<4, 4>(w, rows, k, xp, m, yc, ldy); break;
    }
  }
}

// ---- portable ------------------------------------------------------------------------

float toFloat(float v) { return v; }
float toFloat(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Eight partial sums along k, as the vector kernels keep several.
template <class T>
void portable(const T* w, int64_t rows, const MatmulRows<T>& x, float* y, int64_t ldy) {
  const int64_t k = x.k;
  for (int64_t b = 0; b < x.n; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = w + r * k;
      const T* xb = x.x + b * k;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= k; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += toFloat(row[i + j]) * toFloat(xb[i + j]);
      float s = 0;
      for (; i < k; ++i) s += toFloat(row[i]) * toFloat(xb[i]);
      for (float a : acc) s += a;
      y[b * ldy + r] = s;
    }
}

}  // namespace

bool f32KernelsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

bool bf16KernelsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return available;
}

namespace {

void pack(const float* x, int64_t n, int64_t k, std::vector<float>& packed) {
  packed.assign(size_t(((n + kChunk - 1) / kChunk) * kChunk * k), 0.0f);
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = std::min(kChunk, n - base), npad = pad16(m);
    float* chunk = packed.data() + (base / kChunk) * k * kChunk;
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < k; ++i) chunk[i * npad + b] = x[(base + b) * k + i];
  }
}

void pack(const uint16_t* x, int64_t n, int64_t k, std::vector<uint16_t>& packed) {
  packed.assign(size_t(((n + kChunk - 1) / kChunk) * kChunk * pairs(k) * 2), uint16_t(0));
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = std::min(kChunk, n - base), npad = pad16(m);
    uint16_t* chunk = packed.data() + (base / kChunk) * pairs(k) * kChunk * 2;
    for (int64_t b = 0; b < m; ++b)
      for (int64_t i = 0; i < k; ++i) chunk[((i / 2) * npad + b) * 2 + i % 2] = x[(base + b) * k + i];
  }
}

bool kernelsAvailable(const float*) { return f32KernelsAvailable(); }
bool kernelsAvailable(const uint16_t*) { return bf16KernelsAvailable(); }

}  // namespace

template <class T>
MatmulRows<T>::MatmulRows(const T* xs, int64_t rows, int64_t kk) : x(xs), n(rows), k(kk) {
  if (n >= kPackFrom && kernelsAvailable(xs)) pack(x, n, k, packed);
}

template struct MatmulRows<float>;
template struct MatmulRows<uint16_t>;

void matmulRows(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  if (!f32KernelsAvailable()) return portable(w, rows, x, y, ldy);
  if (x.n == 1) return f32Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return f32RowTiles(w, rows, x.k, x.x, x.n, y, ldy);
  f32Packed(w, rows, x, y, ldy);
}

void matmulRows(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy) {
  if (!bf16KernelsAvailable()) return portable(w, rows, x, y, ldy);
  if (x.n == 1) return bf16Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return bf16RowTiles(w, rows, x.k, x.x, x.n, y, ldy);
  bf16Packed(w, rows, x, y, ldy);
}

}  // namespace crosslab::model
