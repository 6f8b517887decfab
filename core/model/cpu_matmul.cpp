#include "core/model/cpu_matmul.h"

#include "core/model/cpu_simd.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace crosslab::model {
namespace {

// Packed X (n >= 16): chunks of up to kChunk rows, each padded to a multiple of 16 rows (zeros).
//   f32:  element (i, b) of a chunk at  i * npad + b
//   bf16: element (i, b) of a chunk at  ((i / 2) * npad + b) * 2 + i % 2   (dpbf16 takes pairs along k)
constexpr int64_t kChunk = 64;
constexpr int64_t kPackFrom = 16;

int64_t pad16(int64_t m) { return (m + 15) / 16 * 16; }
int64_t pairs(int64_t k) { return (k + 1) / 2; }

using simd::sum16;

// The horizontal sums of four vectors, [Σa, Σb, Σc, Σd], in about a dozen instructions.
CROSSLAB_F32_TARGET inline __m128 sum16x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __mmask16 all = 0xFFFF;
  const __m512 ab = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, a, b, 0x44), _mm512_maskz_shuffle_f32x4(all, a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, c, d, 0x44), _mm512_maskz_shuffle_f32x4(all, c, d, 0xEE));
  const __m512 s = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, ab, cd, 0x88), _mm512_maskz_shuffle_f32x4(all, ab, cd, 0xDD));
  const __m128 q0 = _mm512_castps512_ps128(s), q1 = _mm512_maskz_extractf32x4_ps(0xF, s, 1);
  const __m128 q2 = _mm512_maskz_extractf32x4_ps(0xF, s, 2), q3 = _mm512_maskz_extractf32x4_ps(0xF, s, 3);
  return _mm_hadd_ps(_mm_hadd_ps(q0, q1), _mm_hadd_ps(q2, q3));
}

// One vector's sum exactly as sum16x4 sums it (each of its lanes depends on its own vector only):
// a row left over after the groups of four gets the bits it would get in a group, wherever
// the thread pool's chunks happen to cut the rows.
CROSSLAB_F32_TARGET inline float sum16AsInFour(__m512 v) {
  const __m512 z = _mm512_setzero_ps();
  return _mm_cvtss_f32(sum16x4(v, z, z, z));
}

// Writes the 16 lanes of `acc` (16 X rows, one W row) into Y's column, rows past `valid` dropped.
CROSSLAB_F32_TARGET inline void storeColumn(__m512 acc, float* y, int64_t ldy, int64_t valid) {
  alignas(64) float t[16];
  _mm512_store_ps(t, acc);
  for (int64_t l = 0; l < std::min<int64_t>(16, valid); ++l) y[l * ldy] = t[l];
}

// The packed kernels write a W row's results as a column of Y (one value per X row, ldy apart).
// With a wide Y (an LM head's 128K columns: rows half a megabyte apart) those scattered stores
// cost more than the products at small k, so blocks of kStage W rows are computed into a
// staging block that stays in L1 and copied out row by row. `block(r0, nr, stage, kStage)`
// computes W rows r0 … r0+nr-1 for the m X rows into stage[b * kStage + r].
constexpr int64_t kStage = 64;
template <class Block>
inline void stagedColumns(int64_t rows, int64_t m, float* y, int64_t ldy, const Block& block) {
  if (ldy < 4096) return block(0, rows, y, ldy);  // a narrow Y: its columns are near one another
  alignas(64) float stage[kStage * kChunk];
  for (int64_t r0 = 0; r0 < rows; r0 += kStage) {
    const int64_t nr = std::min(kStage, rows - r0);
    block(r0, nr, stage, kStage);
    for (int64_t b = 0; b < m; ++b) std::memcpy(y + b * ldy + r0, stage + b * kStage, sizeof(float) * size_t(nr));
  }
}

// ---- bf16 ----------------------------------------------------------------------------

// 32 bf16 values from p; lanes past `valid` read as zero.
CROSSLAB_BF16_TARGET inline __m512bh load32(const uint16_t* p, int64_t valid) {
  if (valid >= 32) return (__m512bh)_mm512_loadu_si512(p);
  const __mmask32 mask = valid <= 0 ? 0 : (__mmask32)((1ull << valid) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// n = 1: one row at a time, four accumulators along k; the sums of four consecutive rows
// reduced together (a row's own horizontal sum, 15 dependent adds, cost as much as its
// products at the demo model's k = 128).
CROSSLAB_BF16_TARGET inline __m512 bf16GemvRow(const uint16_t* row, int64_t k, const uint16_t* x) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 128 <= k; i += 128) {
    a0 = _mm512_dpbf16_ps(a0, load32(row + i, 32), load32(x + i, 32));
    a1 = _mm512_dpbf16_ps(a1, load32(row + i + 32, 32), load32(x + i + 32, 32));
    a2 = _mm512_dpbf16_ps(a2, load32(row + i + 64, 32), load32(x + i + 64, 32));
    a3 = _mm512_dpbf16_ps(a3, load32(row + i + 96, 32), load32(x + i + 96, 32));
  }
  for (; i < k; i += 32) a0 = _mm512_dpbf16_ps(a0, load32(row + i, k - i), load32(x + i, k - i));
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

CROSSLAB_BF16_TARGET void bf16Gemv(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, float* y) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const __m512 s0 = bf16GemvRow(w + r * k, k, x), s1 = bf16GemvRow(w + (r + 1) * k, k, x);
    const __m512 s2 = bf16GemvRow(w + (r + 2) * k, k, x), s3 = bf16GemvRow(w + (r + 3) * k, k, x);
    _mm_storeu_ps(y + r, sum16x4(s0, s1, s2, s3));
  }
  for (; r < rows; ++r) y[r] = sum16AsInFour(bf16GemvRow(w + r * k, k, x));
}

// 2 <= n < 16: tiles of NW (4, or 1 for the last rows) W rows x NX (<= 4) X rows, every
// product vectorised along k (all lanes used), four W rows' sums reduced together.
template <int NW, int NX>
CROSSLAB_BF16_TARGET void bf16Tile(const uint16_t* w, int64_t k, const uint16_t* x, float* y, int64_t ldy) {
  __m512 acc[NW][NX];
#pragma GCC unroll 4
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 32) {
    __m512bh xv[NX];
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) xv[j] = load32(x + j * k + i, k - i);
#pragma GCC unroll 4
    for (int r = 0; r < NW; ++r) {
      const __m512bh wv = load32(w + r * k + i, k - i);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], wv, xv[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NX; ++j) {
    if constexpr (NW == 4)
      _mm_storeu_ps(y + j * ldy, sum16x4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
    else
      y[j * ldy] = sum16AsInFour(acc[0][j]);
  }
}

template <int NX>
CROSSLAB_BF16_TARGET void bf16TileRows(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, float* y,
                                       int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) bf16Tile<4, NX>(w + r * k, k, x, y + r, ldy);
  for (; r < rows; ++r) bf16Tile<1, NX>(w + r * k, k, x, y + r, ldy);
}

CROSSLAB_BF16_TARGET void bf16Tiles(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, int64_t n, float* y,
                                    int64_t ldy) {
  for (int64_t j = 0; j < n; j += 4) {
    const uint16_t* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: bf16TileRows<4>(w, rows, k, xj, yj, ldy); break;
      case 3: bf16TileRows<3>(w, rows, k, xj, yj, ldy); break;
      case 2: bf16TileRows<2>(w, rows, k, xj, yj, ldy); break;
      default: bf16TileRows<1>(w, rows, k, xj, yj, ldy); break;
    }
  }
}

// n >= 16, one chunk of m <= 64 X rows packed (NV = npad / 16 vectors per k pair): NW W rows
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
    const uint16_t* xp = x.packed + (base / kChunk) * pairs(k) * kChunk * 2;
    stagedColumns(rows, m, y + base * ldy, ldy, [&](int64_t r0, int64_t nr, float* st, int64_t lds) {
      switch (pad16(m) / 16) {
        case 1: bf16PackedRows<16, 1>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 2: bf16PackedRows<8, 2>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 3: bf16PackedRows<5, 3>(w + r0 * k, nr, k, xp, m, st, lds); break;
        default: bf16PackedRows<4, 4>(w + r0 * k, nr, k, xp, m, st, lds); break;
      }
    });
  }
}

// ---- f32 -----------------------------------------------------------------------------

CROSSLAB_F32_TARGET inline __m512 load16(const float* p, int64_t valid) {
  if (valid >= 16) return _mm512_loadu_ps(p);
  return _mm512_maskz_loadu_ps(valid <= 0 ? 0 : (__mmask16)((1u << valid) - 1), p);
}

CROSSLAB_F32_TARGET inline __m512 f32GemvRow(const float* row, int64_t k, const float* x) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i), _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 16), _mm512_loadu_ps(x + i + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 32), _mm512_loadu_ps(x + i + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(row + i + 48), _mm512_loadu_ps(x + i + 48), a3);
  }
  for (; i < k; i += 16) a0 = _mm512_fmadd_ps(load16(row + i, k - i), load16(x + i, k - i), a0);
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

// n = 1, fp32: as bf16Gemv.
CROSSLAB_F32_TARGET void f32Gemv(const float* w, int64_t rows, int64_t k, const float* x, float* y) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const __m512 s0 = f32GemvRow(w + r * k, k, x), s1 = f32GemvRow(w + (r + 1) * k, k, x);
    const __m512 s2 = f32GemvRow(w + (r + 2) * k, k, x), s3 = f32GemvRow(w + (r + 3) * k, k, x);
    _mm_storeu_ps(y + r, sum16x4(s0, s1, s2, s3));
  }
  for (; r < rows; ++r) y[r] = sum16AsInFour(f32GemvRow(w + r * k, k, x));
}

template <int NW, int NX>
CROSSLAB_F32_TARGET void f32Tile(const float* w, int64_t k, const float* x, float* y, int64_t ldy) {
  __m512 acc[NW][NX];
#pragma GCC unroll 4
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    __m512 xv[NX];
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) xv[j] = load16(x + j * k + i, k - i);
#pragma GCC unroll 4
    for (int r = 0; r < NW; ++r) {
      const __m512 wv = load16(w + r * k + i, k - i);
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_fmadd_ps(wv, xv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NX; ++j) {
    if constexpr (NW == 4)
      _mm_storeu_ps(y + j * ldy, sum16x4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
    else
      y[j * ldy] = sum16AsInFour(acc[0][j]);
  }
}

template <int NX>
CROSSLAB_F32_TARGET void f32TileRows(const float* w, int64_t rows, int64_t k, const float* x, float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) f32Tile<4, NX>(w + r * k, k, x, y + r, ldy);
  for (; r < rows; ++r) f32Tile<1, NX>(w + r * k, k, x, y + r, ldy);
}

CROSSLAB_F32_TARGET void f32Tiles(const float* w, int64_t rows, int64_t k, const float* x, int64_t n, float* y,
                                  int64_t ldy) {
  for (int64_t j = 0; j < n; j += 4) {
    const float* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: f32TileRows<4>(w, rows, k, xj, yj, ldy); break;
      case 3: f32TileRows<3>(w, rows, k, xj, yj, ldy); break;
      case 2: f32TileRows<2>(w, rows, k, xj, yj, ldy); break;
      default: f32TileRows<1>(w, rows, k, xj, yj, ldy); break;
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
    const float* xp = x.packed + (base / kChunk) * k * kChunk;
    stagedColumns(rows, m, y + base * ldy, ldy, [&](int64_t r0, int64_t nr, float* st, int64_t lds) {
      switch (pad16(m) / 16) {
        case 1: f32PackedRows<16, 1>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 2: f32PackedRows<8, 2>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 3: f32PackedRows<5, 3>(w + r0 * k, nr, k, xp, m, st, lds); break;
        default: f32PackedRows<4, 4>(w + r0 * k, nr, k, xp, m, st, lds); break;
      }
    });
  }
}

// ---- attention rows ------------------------------------------------------------------

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

// Grouped-query attention: the R query heads that share a kv head read each cached row once
// (loaded and, for bf16, widened once, then used R times). Per head the arithmetic is that of
// one head alone: the same FMAs in the same order, so the result is bit-identical.

// How a score kernel reads and multiplies, D below: fp32 queries against fp32 keys or bf16 keys
// widened, 16 values per step (FMA); or bf16 queries against bf16 keys (a bf16 model's q is bf16
// after RoPE's rounding), 32 per step through VDPBF16PS: per lane two exact products added in
// turn in fp32, as Intel's SDM specifies, and half the loads and multiply-adds of widening.
template <class T>
struct WidenedScores {
  using Q = float;
  using K = T;
  static constexpr int64_t kStep = 16;
  template <class P>
  CROSSLAB_BF16_TARGET static __m512 load(const P* p, int64_t valid) { return load16Any(p, valid); }
  CROSSLAB_BF16_TARGET static __m512 madd(__m512 acc, __m512 q, __m512 k) { return _mm512_fmadd_ps(q, k, acc); }
};
struct Bf16PairScores {
  using Q = uint16_t;
  using K = uint16_t;
  static constexpr int64_t kStep = 32;
  CROSSLAB_BF16_TARGET static __m512bh load(const uint16_t* p, int64_t valid) { return load32(p, valid); }
  CROSSLAB_BF16_TARGET static __m512 madd(__m512 acc, __m512bh q, __m512bh k) { return _mm512_dpbf16_ps(acc, q, k); }
};

// Four cached rows at a time, their four dot products reduced together, for R heads.
template <class D, int R>
CROSSLAB_BF16_TARGET inline void dotRowsBlock(const typename D::Q* q, const typename D::K* row, int64_t hd, float* s,
                                              int64_t ss) {
  __m512 a[R][4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) a[r][i] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += D::kStep) {
    const auto k0 = D::load(row + d, hd - d), k1 = D::load(row + hd + d, hd - d);
    const auto k2 = D::load(row + 2 * hd + d, hd - d), k3 = D::load(row + 3 * hd + d, hd - d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const auto qv = D::load(q + r * hd + d, hd - d);
      a[r][0] = D::madd(a[r][0], qv, k0);
      a[r][1] = D::madd(a[r][1], qv, k1);
      a[r][2] = D::madd(a[r][2], qv, k2);
      a[r][3] = D::madd(a[r][3], qv, k3);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) _mm_storeu_ps(s + r * ss, sum16x4(a[r][0], a[r][1], a[r][2], a[r][3]));
}

template <class D, int R>
CROSSLAB_BF16_TARGET inline void dotRowsOne(const typename D::Q* q, const typename D::K* row, int64_t hd, float* s,
                                            int64_t ss) {
  __m512 a[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) a[r] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += D::kStep) {
    const auto kv = D::load(row + d, hd - d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) a[r] = D::madd(a[r], D::load(q + r * hd + d, hd - d), kv);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s[r * ss] = sum16(a[r]);
}

template <class D, int R>
CROSSLAB_BF16_TARGET void dotRowsHeads(const typename D::Q* q, const typename D::K* k, int64_t len, int64_t hd, float* s,
                                       int64_t ss) {
  int64_t t = 0;
  for (; t + 4 <= len; t += 4) dotRowsBlock<D, R>(q, k + t * hd, hd, s + t, ss);
  for (; t < len; ++t) dotRowsOne<D, R>(q, k + t * hd, hd, s + t, ss);
}

template <class D>
CROSSLAB_BF16_TARGET void dotRowsKernel(const typename D::Q* q, int64_t heads, const typename D::K* k, int64_t len,
                                        int64_t hd, float* s, int64_t ss) {
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) dotRowsHeads<D, 4>(q + h * hd, k, len, hd, s + h * ss, ss);
  if (heads - h >= 2) {
    dotRowsHeads<D, 2>(q + h * hd, k, len, hd, s + h * ss, ss);
    h += 2;
  }
  if (h < heads) dotRowsHeads<D, 1>(q + h * hd, k, len, hd, s + h * ss, ss);
}

// bf16 weights and values (a bf16 model's probabilities are bf16 after the softmax's rounding):
// VDPBF16PS on pairs of cached rows, t and t + 1 interleaved per value (the two exact products
// added in turn, t + 1 first, in fp32), 32 values of a head per two instructions. The
// accumulators hold the values in the interleave's lane order (lane j of the low half: value
// 8 (j / 4) + j % 4 of the 32 from d0; of the high half: 4 more), permuted from and back to
// `out` once.
template <int R>
CROSSLAB_BF16_TARGET inline void weightedBf16Block(const uint16_t* p, int64_t ps, const uint16_t* v, int64_t len,
                                                   int64_t hd, int64_t d0, float* out) {
  alignas(64) int32_t toLo[16], toHi[16], back0[16], back1[16];
  for (int j = 0; j < 16; ++j) {
    toLo[j] = 8 * (j / 4) + j % 4;
    toHi[j] = toLo[j] + 4;
  }
  for (int d = 0; d < 32; ++d) {  // value d: in the low half when d % 8 < 4, at lane 4 (d / 8) + d % 4
    const int lane = 4 * (d / 8) + d % 4 + (d % 8 < 4 ? 0 : 16);
    (d < 16 ? back0[d] : back1[d - 16]) = lane;
  }
  const __m512i iLo = _mm512_load_si512(toLo), iHi = _mm512_load_si512(toHi);
  const __m512i iB0 = _mm512_load_si512(back0), iB1 = _mm512_load_si512(back1);
  const int64_t valid = hd - d0;
  __m512 lo[R], hi[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 o0 = load16Any(out + r * hd + d0, valid), o1 = load16Any(out + r * hd + d0 + 16, valid - 16);
    lo[r] = _mm512_permutex2var_ps(o0, iLo, o1);
    hi[r] = _mm512_permutex2var_ps(o0, iHi, o1);
  }
  for (int64_t t = 0; t < len; t += 2) {
    const __m512i a = (__m512i)load32(v + t * hd + d0, valid);
    const __m512i b = t + 1 < len ? (__m512i)load32(v + (t + 1) * hd + d0, valid) : _mm512_setzero_si512();
    const __m512bh il = (__m512bh)_mm512_unpacklo_epi16(a, b), ih = (__m512bh)_mm512_unpackhi_epi16(a, b);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint32_t pair = uint32_t(p[r * ps + t]) | (t + 1 < len ? uint32_t(p[r * ps + t + 1]) << 16 : 0u);
      const __m512bh pp = (__m512bh)_mm512_set1_epi32(int32_t(pair));
      lo[r] = _mm512_dpbf16_ps(lo[r], pp, il);
      hi[r] = _mm512_dpbf16_ps(hi[r], pp, ih);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    storeMasked(out + r * hd + d0, _mm512_permutex2var_ps(lo[r], iB0, hi[r]), valid);
    storeMasked(out + r * hd + d0 + 16, _mm512_permutex2var_ps(lo[r], iB1, hi[r]), valid - 16);
  }
}

template <int R>
CROSSLAB_BF16_TARGET void weightedBf16Heads(const uint16_t* p, int64_t ps, const uint16_t* v, int64_t len, int64_t hd,
                                            float* out) {
  for (int64_t d0 = 0; d0 < hd; d0 += 32) weightedBf16Block<R>(p, ps, v, len, hd, d0, out);
}

CROSSLAB_BF16_TARGET void weightedBf16Kernel(const uint16_t* p, int64_t heads, int64_t ps, const uint16_t* v,
                                             int64_t len, int64_t hd, float* out) {
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) weightedBf16Heads<4>(p + h * ps, ps, v, len, hd, out + h * hd);
  if (heads - h >= 2) {
    weightedBf16Heads<2>(p + h * ps, ps, v, len, hd, out + h * hd);
    h += 2;
  }
  if (h < heads) weightedBf16Heads<1>(p + h * ps, ps, v, len, hd, out + h * hd);
}

template <class T, int R, int C>
CROSSLAB_BF16_TARGET inline void weightedRowsBlock(const float* p, int64_t ps, const T* v, int64_t len, int64_t hd,
                                                   int64_t d0, float* out) {
  __m512 acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = load16Any(out + r * hd + d0 + 16 * c, hd - d0 - 16 * c);
  for (int64_t t = 0; t < len; ++t) {
    __m512 vv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) vv[c] = load16Any(v + t * hd + d0 + 16 * c, hd - d0 - 16 * c);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 pb = _mm512_set1_ps(p[r * ps + t]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(pb, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) storeMasked(out + r * hd + d0 + 16 * c, acc[r][c], hd - d0 - 16 * c);
}

template <class T, int R>
CROSSLAB_BF16_TARGET void weightedRowsHeads(const float* p, int64_t ps, const T* v, int64_t len, int64_t hd,
                                            float* out) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch (std::min<int64_t>(4, (hd - d0 + 15) / 16)) {
      case 4: weightedRowsBlock<T, R, 4>(p, ps, v, len, hd, d0, out); break;
      case 3: weightedRowsBlock<T, R, 3>(p, ps, v, len, hd, d0, out); break;
      case 2: weightedRowsBlock<T, R, 2>(p, ps, v, len, hd, d0, out); break;
      default: weightedRowsBlock<T, R, 1>(p, ps, v, len, hd, d0, out); break;
    }
  }
}

template <class T>
CROSSLAB_BF16_TARGET void weightedRowsKernel(const float* p, int64_t heads, int64_t ps, const T* v, int64_t len,
                                             int64_t hd, float* out) {
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) weightedRowsHeads<T, 4>(p + h * ps, ps, v, len, hd, out + h * hd);
  if (heads - h >= 2) {
    weightedRowsHeads<T, 2>(p + h * ps, ps, v, len, hd, out + h * hd);
    h += 2;
  }
  if (h < heads) weightedRowsHeads<T, 1>(p + h * ps, ps, v, len, hd, out + h * hd);
}

// ---- a transposed small-k product (LoRA expand) ---------------------------------------


template <class T>
CROSSLAB_BF16_TARGET void transposedKernel(const T* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y,
                                           int64_t ldy) {
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * k;
    float* yb = y + b * ldy;
    for (int64_t j = 0; j < out; j += 64) {  // four vectors of outputs at a time, k in order
      const int64_t w = out - j;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
      for (int64_t i = 0; i < k; ++i) {
        const __m512 s = _mm512_set1_ps(xb[i]);
        const T* row = wt + i * out + j;
        a0 = _mm512_fmadd_ps(s, load16Any(row, w), a0);
        if (w > 16) a1 = _mm512_fmadd_ps(s, load16Any(row + 16, w - 16), a1);
        if (w > 32) a2 = _mm512_fmadd_ps(s, load16Any(row + 32, w - 32), a2);
        if (w > 48) a3 = _mm512_fmadd_ps(s, load16Any(row + 48, w - 48), a3);
      }
      storeMasked(yb + j, a0, w);
      storeMasked(yb + j + 16, a1, w - 16);
      storeMasked(yb + j + 32, a2, w - 32);
      storeMasked(yb + j + 48, a3, w - 48);
    }
  }
}

// ---- portable ------------------------------------------------------------------------

float toFloat(float v) { return v; }
float toFloat(uint16_t bits) { return simd::bf16ToFloat(bits); }

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

int64_t matmulGrain(int64_t k, int64_t n) {
  const int64_t kk = std::max<int64_t>(1, k), work = kk * std::max<int64_t>(1, n);
  const int64_t byStream = ((int64_t(1) << 18) + kk - 1) / kk, byWork = ((int64_t(1) << 20) + work - 1) / work;
  return std::max<int64_t>(16, std::min(byStream, byWork));
}

bool bf16KernelsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return available;
}

namespace {

// Every lane a kernel reads is written (padding rows and, for bf16 with an odd k, the last
// pair's second half as zeros): the buffer is reused without clearing it.
void pack(const float* x, int64_t n, int64_t k, std::vector<float>& packed) {
  const size_t size = size_t(((n + kChunk - 1) / kChunk) * kChunk * k);
  if (packed.size() < size) packed.resize(size);
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = std::min(kChunk, n - base), npad = pad16(m);
    float* chunk = packed.data() + (base / kChunk) * k * kChunk;
    const float* xs = x + base * k;
    for (int64_t i = 0; i < k; ++i) {
      float* line = chunk + i * npad;
      for (int64_t b = 0; b < m; ++b) line[b] = xs[b * k + i];
      for (int64_t b = m; b < npad; ++b) line[b] = 0.0f;
    }
  }
}

void pack(const uint16_t* x, int64_t n, int64_t k, std::vector<uint16_t>& packed) {
  const size_t size = size_t(((n + kChunk - 1) / kChunk) * kChunk * pairs(k) * 2);
  if (packed.size() < size) packed.resize(size);
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = std::min(kChunk, n - base), npad = pad16(m);
    uint16_t* chunk = packed.data() + (base / kChunk) * pairs(k) * kChunk * 2;
    const uint16_t* xs = x + base * k;
    for (int64_t p = 0; p < pairs(k); ++p) {
      uint16_t* line = chunk + p * npad * 2;
      const int64_t i = 2 * p;
      for (int64_t b = 0; b < m; ++b) {
        line[2 * b] = xs[b * k + i];
        line[2 * b + 1] = i + 1 < k ? xs[b * k + i + 1] : uint16_t(0);
      }
      for (int64_t b = m; b < npad; ++b) line[2 * b] = line[2 * b + 1] = 0;
    }
  }
}

bool kernelsAvailable(const float*) { return f32KernelsAvailable(); }
bool kernelsAvailable(const uint16_t*) { return bf16KernelsAvailable(); }

}  // namespace

template <class T>
MatmulRows<T>::MatmulRows(const T* xs, int64_t rows, int64_t kk) : MatmulRows(xs, rows, kk, own_) {}

template <class T>
MatmulRows<T>::MatmulRows(const T* xs, int64_t rows, int64_t kk, std::vector<T>& buffer) : x(xs), n(rows), k(kk) {
  if (n >= kPackFrom && kernelsAvailable(xs)) {
    pack(x, n, k, buffer);
    packed = buffer.data();
  }
}

template struct MatmulRows<float>;
template struct MatmulRows<uint16_t>;

void matmulRows(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  if (!f32KernelsAvailable()) return portable(w, rows, x, y, ldy);
  if (x.n == 1) return f32Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return f32Tiles(w, rows, x.k, x.x, x.n, y, ldy);
  f32Packed(w, rows, x, y, ldy);
}

void matmulRows(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy) {
  if (!bf16KernelsAvailable()) return portable(w, rows, x, y, ldy);
  if (x.n == 1) return bf16Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return bf16Tiles(w, rows, x.k, x.x, x.n, y, ldy);
  bf16Packed(w, rows, x, y, ldy);
}

namespace {

template <class T>
void dotRowsPortable(const float* q, int64_t heads, const T* k, int64_t len, int64_t hd, float* s, int64_t ss) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = 0; t < len; ++t) {
      float acc = 0;
      for (int64_t d = 0; d < hd; ++d) acc += q[h * hd + d] * toFloat(k[t * hd + d]);
      s[h * ss + t] = acc;
    }
}

template <class T>
void weightedRowsPortable(const float* p, int64_t heads, int64_t ps, const T* v, int64_t len, int64_t hd, float* out) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = 0; t < len; ++t)
      for (int64_t d = 0; d < hd; ++d) out[h * hd + d] += p[h * ps + t] * toFloat(v[t * hd + d]);
}

}  // namespace

// The fp32 rows need only AVX-512F, but share the bf16 kernels' target: one check.
void dotRows(const float* q, int64_t heads, const float* k, int64_t len, int64_t hd, float* s, int64_t ss) {
  bf16KernelsAvailable() ? dotRowsKernel<WidenedScores<float>>(q, heads, k, len, hd, s, ss)
                         : dotRowsPortable(q, heads, k, len, hd, s, ss);
}
void dotRows(const float* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss) {
  bf16KernelsAvailable() ? dotRowsKernel<WidenedScores<uint16_t>>(q, heads, k, len, hd, s, ss)
                         : dotRowsPortable(q, heads, k, len, hd, s, ss);
}
void dotRows(const uint16_t* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss) {
  if (bf16KernelsAvailable()) return dotRowsKernel<Bf16PairScores>(q, heads, k, len, hd, s, ss);
  std::vector<float> qf(size_t(heads * hd));  // exact: bf16 widened
  for (size_t i = 0; i < qf.size(); ++i) qf[i] = toFloat(q[i]);
  dotRowsPortable(qf.data(), heads, k, len, hd, s, ss);
}
void weightedRows(const uint16_t* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out) {
  if (bf16KernelsAvailable()) return weightedBf16Kernel(p, heads, ps, v, len, hd, out);
  std::vector<float> pf(size_t(heads * ps));  // exact: bf16 widened
  for (size_t i = 0; i < pf.size(); ++i) pf[i] = toFloat(p[i]);
  weightedRowsPortable(pf.data(), heads, ps, v, len, hd, out);
}
void weightedRows(const float* p, int64_t heads, int64_t ps, const float* v, int64_t len, int64_t hd, float* out) {
  bf16KernelsAvailable() ? weightedRowsKernel(p, heads, ps, v, len, hd, out)
                         : weightedRowsPortable(p, heads, ps, v, len, hd, out);
}
void weightedRows(const float* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out) {
  bf16KernelsAvailable() ? weightedRowsKernel(p, heads, ps, v, len, hd, out)
                         : weightedRowsPortable(p, heads, ps, v, len, hd, out);
}

template <class T>
void transposedPortable(const T* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < out; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += x[b * k + i] * toFloat(wt[i * out + j]);
      y[b * ldy + j] = acc;
    }
}

void matmulTransposed(const float* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy) {
  bf16KernelsAvailable() ? transposedKernel(wt, k, out, x, n, y, ldy) : transposedPortable(wt, k, out, x, n, y, ldy);
}
void matmulTransposed(const uint16_t* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy) {
  bf16KernelsAvailable() ? transposedKernel(wt, k, out, x, n, y, ldy) : transposedPortable(wt, k, out, x, n, y, ldy);
}

}  // namespace crosslab::model
