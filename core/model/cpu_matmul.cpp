#include "core/model/cpu_matmul.h"

#include "core/model/cpu_elementwise.h"
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

using simd::pad16;
int64_t pairs(int64_t k) { return (k + 1) / 2; }

using simd::aheadLinesOf;
using simd::aheadOf;
using simd::laneMask;
using simd::load16Any;
using simd::load32;
using simd::prefetchLine;
using simd::roundBf16x16;
using simd::sum16;
using simd::sum16x4;

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

// Four W rows' accumulators (16 X rows each: lane b holds X row b) transposed four lanes at a
// time, so that each X row b < valid gets its four values, W rows r … r+3, in one 16-byte store
// at y[b * ldy]: 8 shuffles, 12 lane extracts and 16 stores instead of storeColumn's 64 scalar
// ones (a harness, one thread, bf16 384 x 128 at 32 rows: 131-134 -> 203-205 GFLOP/s).
template <int L>
CROSSLAB_F32_TARGET inline void storeLane(__m512 u, float* y, int64_t ldy, int64_t b, int64_t valid) {
  if (b < valid) _mm_storeu_ps(y + b * ldy, _mm512_extractf32x4_ps(u, L));
}

CROSSLAB_F32_TARGET inline void storeRows4(__m512 a0, __m512 a1, __m512 a2, __m512 a3, float* y, int64_t ldy,
                                           int64_t valid) {
  // per 128-bit lane L (X rows 4L … 4L+3): t0 = a0[0] a1[0] a0[1] a1[1], t1 = a0[2] a1[2] a0[3] a1[3], …
  const __m512 t0 = _mm512_unpacklo_ps(a0, a1), t1 = _mm512_unpackhi_ps(a0, a1);
  const __m512 t2 = _mm512_unpacklo_ps(a2, a3), t3 = _mm512_unpackhi_ps(a2, a3);
  // u_j's lane L: a0 … a3 of X row 4L + j
  const __m512 u0 = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 u1 = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m512 u2 = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 u3 = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  storeLane<0>(u0, y, ldy, 0, valid), storeLane<0>(u1, y, ldy, 1, valid);
  storeLane<0>(u2, y, ldy, 2, valid), storeLane<0>(u3, y, ldy, 3, valid);
  storeLane<1>(u0, y, ldy, 4, valid), storeLane<1>(u1, y, ldy, 5, valid);
  storeLane<1>(u2, y, ldy, 6, valid), storeLane<1>(u3, y, ldy, 7, valid);
  storeLane<2>(u0, y, ldy, 8, valid), storeLane<2>(u1, y, ldy, 9, valid);
  storeLane<2>(u2, y, ldy, 10, valid), storeLane<2>(u3, y, ldy, 11, valid);
  storeLane<3>(u0, y, ldy, 12, valid), storeLane<3>(u1, y, ldy, 13, valid);
  storeLane<3>(u2, y, ldy, 14, valid), storeLane<3>(u3, y, ldy, 15, valid);
}

// A packed tile's accumulators (acc[r][v]: W row r, X rows 16v … 16v+15) into Y: W rows four
// at a time through storeRows4, the rest (NW % 4) a column each; X rows from m on dropped.
template <int NW, int NV>
CROSSLAB_F32_TARGET inline void storeTile(const __m512 (&acc)[NW][NV], float* y, int64_t ldy, int64_t m) {
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    float* yv = y + v * 16 * ldy;
    const int64_t valid = m - v * 16;
    int r = 0;
#pragma GCC unroll 4
    for (; r + 4 <= NW; r += 4) storeRows4(acc[r][v], acc[r + 1][v], acc[r + 2][v], acc[r + 3][v], yv + r, ldy, valid);
#pragma GCC unroll 4
    for (; r < NW; ++r) storeColumn(acc[r][v], yv + r, ldy, valid);
  }
}

// The packed kernels write a W row's results as a column of Y (one value per X row, ldy apart).
// With a wide Y (an LM head's 128K columns: rows half a megabyte apart) those scattered stores
// cost more than the products at small k, so blocks of kStage W rows are computed into a
// staging block that stays in L1 and copied out row by row. `block(r0, nr, stage, kStage)`
// computes W rows r0 … r0+nr-1 for the m X rows into stage[b * kStage + r].
constexpr int64_t kStage = 64;
// With `round`, every value is rounded to bf16 on its way out of the staging block (a narrow Y:
// in place once the block is done, while in cache), so no second pass reads Y again.
CROSSLAB_F32_TARGET inline void copyRounded(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = laneMask(n - i);
    _mm512_mask_storeu_ps(dst + i, m, roundBf16x16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}
template <class Block>
inline void stagedColumns(int64_t rows, int64_t m, float* y, int64_t ldy, bool round, const Block& block) {
  if (ldy < 4096) {  // a narrow Y: its columns are near one another
    block(0, rows, y, ldy);
    if (round)
      for (int64_t b = 0; b < m; ++b) roundBf16(y + b * ldy, rows);
    return;
  }
  alignas(64) float stage[kStage * kChunk];
  for (int64_t r0 = 0; r0 < rows; r0 += kStage) {
    const int64_t nr = std::min(kStage, rows - r0);
    block(r0, nr, stage, kStage);
    for (int64_t b = 0; b < m; ++b) {
      if (round)
        copyRounded(y + b * ldy + r0, stage + b * kStage, nr);
      else
        std::memcpy(y + b * ldy + r0, stage + b * kStage, sizeof(float) * size_t(nr));
    }
  }
}

// ---- bf16 ----------------------------------------------------------------------------

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
// product vectorised along k (all lanes used), four W rows' sums reduced together; `ahead`
// (0: none) is where the tile's W lines are requested from, a tile's worth further on.
template <int NW, int NX>
CROSSLAB_BF16_TARGET void bf16Tile(const uint16_t* w, int64_t k, const uint16_t* x, float* y, int64_t ldy,
                                   uintptr_t ahead) {
  __m512 acc[NW][NX];
#pragma GCC unroll 4
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 32) {
    if (ahead)
#pragma GCC unroll 4
      for (int r = 0; r < NW; ++r) prefetchLine(ahead, (i / 32) * NW + r);
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

// Every X row against NW W rows before the next W rows: W is streamed once per product, not
// once per four X rows (its rows stay in L1 while the X rows, n * k values, are read again).
// The first X rows' tile requests, a line per W row per step of k, the lines of the W rows
// kTileAhead tiles further on: at a few X rows W is read too slowly for the hardware prefetcher
// alone (bench/matmul_bench, one thread, bf16 128256 x 768 at 8 rows: 17.9-18.0 -> 8.6-9.3 ms
// with the new order and the requests; the order alone 17.8 ms).
constexpr int64_t kTileAhead = 2;
template <int NW>
CROSSLAB_BF16_TARGET void bf16TileColumn(const uint16_t* w, int64_t k, const uint16_t* x, int64_t n, float* y,
                                         int64_t ldy) {
  const uintptr_t ahead = aheadOf(w, kTileAhead * NW * k);
  for (int64_t j = 0; j < n; j += 4) {
    const uint16_t* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: bf16Tile<NW, 4>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      case 3: bf16Tile<NW, 3>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      case 2: bf16Tile<NW, 2>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      default: bf16Tile<NW, 1>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
    }
  }
}

CROSSLAB_BF16_TARGET void bf16Tiles(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* x, int64_t n, float* y,
                                    int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) bf16TileColumn<4>(w + r * k, k, x, n, y + r, ldy);
  for (; r < rows; ++r) bf16TileColumn<1>(w + r * k, k, x, n, y + r, ldy);
}

// The packed tiles read their NW W rows a few values per step, too slowly for the hardware
// prefetcher to run ahead of a W that is not in cache (an LM head's 16 MB): each tile requests,
// one line per step of k, the lines of the tile kAheadTiles further on (prefetches past W's end
// are harmless: they never fault). 128256 x 64, 32 rows, one thread (bench/matmul_bench): bf16
// 74-75 -> 99-105 GFLOP/s with the transposed stores above.
// A tile requests one line per step of k while it has steps: all of aheadLinesOf's lines but, at
// NW = 16, the last one.
constexpr int64_t kAheadTiles = 2;
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
  const uintptr_t ahead = aheadOf(w, kAheadTiles * NW * k);
  const int64_t aheadLines = aheadLinesOf<uint16_t>(NW * k);
  for (int64_t p = 0; p < fullPairs; ++p) {
    if (p < aheadLines) prefetchLine(ahead, p);
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
  storeTile<NW, NV>(acc, y, ldy, m);
}

// One vector of X rows (m <= 16): as f32PackedTileOne (below), eight pairs of k at a time, each
// W row's eight pairs from one address. The same bits as bf16PackedTile<NW, 1>.
template <int NW>
CROSSLAB_BF16_TARGET void bf16PackedTileOne(const uint16_t* w, int64_t k, const uint16_t* xp, int64_t m, float* y,
                                            int64_t ldy) {
  constexpr int KB = 8;
  __m512 acc[NW][1];
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r) acc[r][0] = _mm512_setzero_ps();
  const int64_t fullPairs = k / 2;
  const uintptr_t ahead = aheadOf(w, kAheadTiles * NW * k);
  const int64_t aheadLines = aheadLinesOf<uint16_t>(NW * k);
  int64_t p = 0;
  for (; p + KB <= fullPairs; p += KB) {
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j)
      if (p + j < aheadLines) prefetchLine(ahead, p + j);
    __m512bh xv[KB];
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j) xv[j] = (__m512bh)_mm512_loadu_si512(xp + (p + j) * 32);
    const uint16_t* wr = w + 2 * p;
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r, wr += k)
#pragma GCC unroll 8
      for (int j = 0; j < KB; ++j) {
        int32_t pair;
        std::memcpy(&pair, wr + 2 * j, sizeof pair);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)_mm512_set1_epi32(pair), xv[j]);
      }
  }
  for (; p < fullPairs; ++p) {
    if (p < aheadLines) prefetchLine(ahead, p);
    const __m512bh xv = (__m512bh)_mm512_loadu_si512(xp + p * 32);
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r) {
      int32_t pair;
      std::memcpy(&pair, w + r * k + 2 * p, sizeof pair);
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)_mm512_set1_epi32(pair), xv);
    }
  }
  if (k % 2) {  // the last k alone: its pair's second half is zero in the packed X
    const __m512bh xv = (__m512bh)_mm512_loadu_si512(xp + fullPairs * 32);
    for (int r = 0; r < NW; ++r)
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)_mm512_set1_epi32(int32_t(w[r * k + k - 1])), xv);
  }
  storeTile<NW, 1>(acc, y, ldy, m);
}

template <int NW, int NV>
CROSSLAB_BF16_TARGET void bf16PackedRows(const uint16_t* w, int64_t rows, int64_t k, const uint16_t* xp, int64_t m,
                                         float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + NW <= rows; r += NW) {
    if constexpr (NV == 1)
      bf16PackedTileOne<NW>(w + r * k, k, xp, m, y + r, ldy);
    else
      bf16PackedTile<NW, NV>(w + r * k, k, xp, m, y + r, ldy);
  }
  for (; r < rows; ++r) bf16PackedTile<1, NV>(w + r * k, k, xp, m, y + r, ldy);
}

CROSSLAB_BF16_TARGET void bf16Packed(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y,
                                     int64_t ldy, bool round) {
  const int64_t k = x.k;
  for (int64_t base = 0; base < x.n; base += kChunk) {
    const int64_t m = std::min(kChunk, x.n - base);
    const uint16_t* xp = x.packed + (base / kChunk) * pairs(k) * kChunk * 2;
    stagedColumns(rows, m, y + base * ldy, ldy, round, [&](int64_t r0, int64_t nr, float* st, int64_t lds) {
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
CROSSLAB_F32_TARGET void f32Tile(const float* w, int64_t k, const float* x, float* y, int64_t ldy, uintptr_t ahead) {
  __m512 acc[NW][NX];
#pragma GCC unroll 4
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    if (ahead)
#pragma GCC unroll 4
      for (int r = 0; r < NW; ++r) prefetchLine(ahead, (i / 16) * NW + r);
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

// As bf16TileColumn: W streamed once for every X row.
template <int NW>
CROSSLAB_F32_TARGET void f32TileColumn(const float* w, int64_t k, const float* x, int64_t n, float* y, int64_t ldy) {
  const uintptr_t ahead = aheadOf(w, kTileAhead * NW * k);
  for (int64_t j = 0; j < n; j += 4) {
    const float* xj = x + j * k;
    float* yj = y + j * ldy;
    switch (std::min<int64_t>(4, n - j)) {
      case 4: f32Tile<NW, 4>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      case 3: f32Tile<NW, 3>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      case 2: f32Tile<NW, 2>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
      default: f32Tile<NW, 1>(w, k, xj, yj, ldy, j == 0 ? ahead : 0); break;
    }
  }
}

CROSSLAB_F32_TARGET void f32Tiles(const float* w, int64_t rows, int64_t k, const float* x, int64_t n, float* y,
                                  int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) f32TileColumn<4>(w + r * k, k, x, n, y + r, ldy);
  for (; r < rows; ++r) f32TileColumn<1>(w + r * k, k, x, n, y + r, ldy);
}

template <int NW, int NV>
CROSSLAB_F32_TARGET void f32PackedTile(const float* w, int64_t k, const float* xp, int64_t m, float* y, int64_t ldy) {
  constexpr int64_t npad = 16 * NV;
  __m512 acc[NW][NV];
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  const uintptr_t ahead = aheadOf(w, kAheadTiles * NW * k);
  const int64_t aheadLines = aheadLinesOf<float>(NW * k);
  for (int64_t i = 0; i < k; ++i) {
    if (i < aheadLines) prefetchLine(ahead, i);
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
  storeTile<NW, NV>(acc, y, ldy, m);
}

// One vector of X rows (m <= 16): f32PackedTile<NW, 1> broadcasts one W value per multiply-add,
// from NW rows k apart, and with NW = 16 the compiler kept the rows' addresses partly in vector
// registers (six moves back per step of k) and on the stack. Here eight steps of k at a time:
// their eight X vectors loaded once, then each W row's eight values in turn from one address
// (the next row's a single add further on). Each accumulator still adds its products in k's
// order: the same bits.
template <int NW>
CROSSLAB_F32_TARGET void f32PackedTileOne(const float* w, int64_t k, const float* xp, int64_t m, float* y,
                                          int64_t ldy) {
  constexpr int KB = 8;
  __m512 acc[NW][1];
#pragma GCC unroll 16
  for (int r = 0; r < NW; ++r) acc[r][0] = _mm512_setzero_ps();
  const uintptr_t ahead = aheadOf(w, kAheadTiles * NW * k);
  const int64_t aheadLines = aheadLinesOf<float>(NW * k);
  int64_t i = 0;
  for (; i + KB <= k; i += KB) {
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j)
      if (i + j < aheadLines) prefetchLine(ahead, i + j);
    __m512 xv[KB];
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j) xv[j] = _mm512_loadu_ps(xp + (i + j) * 16);
    const float* wr = w + i;
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r, wr += k)
#pragma GCC unroll 8
      for (int j = 0; j < KB; ++j) acc[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(wr[j]), xv[j], acc[r][0]);
  }
  for (; i < k; ++i) {
    if (i < aheadLines) prefetchLine(ahead, i);
    const __m512 xv = _mm512_loadu_ps(xp + i * 16);
#pragma GCC unroll 16
    for (int r = 0; r < NW; ++r) acc[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(w[r * k + i]), xv, acc[r][0]);
  }
  storeTile<NW, 1>(acc, y, ldy, m);
}

template <int NW, int NV>
CROSSLAB_F32_TARGET void f32PackedRows(const float* w, int64_t rows, int64_t k, const float* xp, int64_t m, float* y,
                                       int64_t ldy) {
  int64_t r = 0;
  for (; r + NW <= rows; r += NW) {
    if constexpr (NV == 1)
      f32PackedTileOne<NW>(w + r * k, k, xp, m, y + r, ldy);
    else
      f32PackedTile<NW, NV>(w + r * k, k, xp, m, y + r, ldy);
  }
  for (; r < rows; ++r) f32PackedTile<1, NV>(w + r * k, k, xp, m, y + r, ldy);
}

CROSSLAB_F32_TARGET void f32Packed(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  const int64_t k = x.k;
  for (int64_t base = 0; base < x.n; base += kChunk) {
    const int64_t m = std::min(kChunk, x.n - base);
    const float* xp = x.packed + (base / kChunk) * k * kChunk;
    stagedColumns(rows, m, y + base * ldy, ldy, false, [&](int64_t r0, int64_t nr, float* st, int64_t lds) {
      switch (pad16(m) / 16) {
        case 1: f32PackedRows<16, 1>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 2: f32PackedRows<8, 2>(w + r0 * k, nr, k, xp, m, st, lds); break;
        case 3: f32PackedRows<5, 3>(w + r0 * k, nr, k, xp, m, st, lds); break;
        default: f32PackedRows<4, 4>(w + r0 * k, nr, k, xp, m, st, lds); break;
      }
    });
  }
}

// Without the AVX-512 kernels: the AVX2 loop where the CPU has it, else the portable one
// (cpu_matmul_loops.cpp).
template <class T>
void withoutKernels(const T* w, int64_t rows, const MatmulRows<T>& x, float* y, int64_t ldy) {
  if (detail::avx2RowsAvailable()) return detail::matmulRowsAvx2(w, rows, x, y, ldy);
  detail::matmulRowsPortable(w, rows, x, y, ldy);
}

}  // namespace

bool vectorRowsAvailable(bool bf16) {
  return (bf16 ? bf16KernelsAvailable() : f32KernelsAvailable()) || detail::avx2RowsAvailable();
}

namespace detail {
void capKernels(KernelCap cap) {
  simd::kernelCap.store(cap == KernelCap::All ? 0 : cap == KernelCap::NoAvx512 ? 1 : 2, std::memory_order_relaxed);
}
}  // namespace detail

bool f32KernelsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available && simd::kernelCap.load(std::memory_order_relaxed) < 1;
}

int64_t matmulGrain(int64_t k, int64_t n) {
  const int64_t kk = std::max<int64_t>(1, k), work = kk * std::max<int64_t>(1, n);
  const int64_t byStream = ((int64_t(1) << 18) + kk - 1) / kk, byWork = ((int64_t(1) << 20) + work - 1) / work;
  return std::max<int64_t>(16, std::min(byStream, byWork));
}

bool bf16KernelsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return available && simd::kernelCap.load(std::memory_order_relaxed) < 1;
}

namespace {

// Every lane a kernel reads is written (padding rows and, for bf16 with an odd k, the last
// pair's second half as zeros): the buffer is reused without clearing it.
// fp32: chunks of `rows` (kChunk for the AVX-512 kernels, simd::kAvx2PackGroup for the AVX2
// packed loop), chunk c at c * rows * k.
void pack(const float* x, int64_t n, int64_t k, std::vector<float>& packed, int64_t rows = kChunk) {
  const size_t size = size_t(((n + rows - 1) / rows) * rows * k);
  if (packed.size() < size) packed.resize(size);
  for (int64_t base = 0; base < n; base += rows) {
    const int64_t m = std::min(rows, n - base), npad = pad16(m);
    float* chunk = packed.data() + base * k;
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
  if (n < kPackFrom) return;
  if (kernelsAvailable(xs)) {
    pack(x, n, k, buffer);
    packed = buffer.data();
  } else if constexpr (std::is_same_v<T, float>) {
    if (detail::avx2PackedAvailable()) {
      pack(x, n, k, buffer, simd::kAvx2PackGroup);
      packedAvx2 = buffer.data();
    }
  }
}

template <class T>
void MatmulRows<T>::widen(const float* wide, std::vector<float>& buffer) {
  widened = wide;
  if (std::is_same_v<T, uint16_t> && n >= kPackFrom && !bf16KernelsAvailable() && detail::avx2PackedAvailable()) {
    pack(wide, n, k, buffer, simd::kAvx2PackGroup);
    packedAvx2 = buffer.data();
  }
}

template struct MatmulRows<float>;
template struct MatmulRows<uint16_t>;

namespace {

// The product, then its values rounded in place (the tiles and the gemv write Y directly;
// rounding 256-row blocks as they were done measured slower than one pass after, at 8 rows).
template <class T, class Product>
void productThenRound(const T* w, int64_t rows, const MatmulRows<T>& x, float* y, int64_t ldy, const Product& product) {
  product(w, rows, x, y, ldy);
  for (int64_t b = 0; b < x.n; ++b) roundBf16(y + b * ldy, rows);
}

void f32Rows(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  if (!f32KernelsAvailable()) {
    if (x.packedAvx2 && detail::avx2PackedAvailable())
      return detail::matmulPackedAvx2(w, rows, x.k, x.packedAvx2, x.n, y, ldy);
    return withoutKernels(w, rows, x, y, ldy);
  }
  if (x.n == 1) return f32Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return f32Tiles(w, rows, x.k, x.x, x.n, y, ldy);
  f32Packed(w, rows, x, y, ldy);
}

void bf16Rows(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy) {
  if (!bf16KernelsAvailable()) {
    if (x.packedAvx2 && detail::avx2PackedAvailable())
      return detail::matmulPackedAvx2(w, rows, x.k, x.packedAvx2, x.n, y, ldy);
    return withoutKernels(w, rows, x, y, ldy);
  }
  if (x.n == 1) return bf16Gemv(w, rows, x.k, x.x, y);
  if (x.n < kPackFrom) return bf16Tiles(w, rows, x.k, x.x, x.n, y, ldy);
  bf16Packed(w, rows, x, y, ldy, false);
}

}  // namespace

void matmulRows(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy, bool roundOut) {
  if (roundOut) return productThenRound(w, rows, x, y, ldy, f32Rows);
  f32Rows(w, rows, x, y, ldy);
}

void matmulRows(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy, bool roundOut) {
  if (roundOut && bf16KernelsAvailable() && x.n >= kPackFrom) return bf16Packed(w, rows, x, y, ldy, true);
  if (roundOut) return productThenRound(w, rows, x, y, ldy, bf16Rows);
  bf16Rows(w, rows, x, y, ldy);
}

}  // namespace crosslab::model
