// Y = X Wᵀ for 16+ X rows on CPUs with AVX2 and FMA but not the AVX-512 kernels
// (core/model/cpu_matmul.h): the AVX-512 packed kernels' design in eight lanes. X comes packed
// in groups of up to 32 rows (each k's values of a group side by side, padded to 16 or 32
// rows), so that one vector holds eight rows' values at the same k; each W value is broadcast
// against it, and a tile of W rows by up to four such vectors accumulates with no horizontal
// sums and no transposes. Each sum is the chain of fused multiply-adds over k from zero, the
// AVX-512 f32 packed kernel's bits (a bf16 W's products are exact in fp32, so there it is also
// the chain of multiplies and adds).
//
// The reducing loop it replaces at 16+ rows (cpu_matmul_loops.cpp: four W rows against two X
// rows, each a sum per lane and a transpose to finish) keeps the portable loop's order: a
// separate multiply and add, eight sums in flight, and a finish per tile. Here a step of k is
// four X vectors, three broadcasts and twelve FMAs, with no finish.
#include "core/model/cpu_matmul.h"
#include "core/model/cpu_simd.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#define CROSSLAB_FMA_TARGET __attribute__((target("avx2,fma")))

namespace crosslab::model {
namespace {

using simd::pad16;
constexpr int64_t kGroup = simd::kAvx2PackGroup;  // X rows a packed group holds at most

// A bf16 W tile is widened to fp32 a slice of k at a time into a buffer that stays in L1
// (three rows of 1 024 values: 12 KB), so that each value is widened once for all of X's
// groups and then broadcast from memory as an fp32 W's is. A k past one slice carries each
// group's sums through memory (stored and loaded as vectors: the chain over k is unchanged).
// `taskset -c 1 matmul_bench`, the `small` LM head (128256 x 768, 32 X rows): slices of 512
// 68-70 GFLOP/s, of 1 024 75-78.
constexpr int64_t kSlice = 1024;

// NW W rows (rows ldw apart) against NV vectors of a packed group (width floats per k), over k
// values [0, len): acc[r][v] += w[r][i] * x[i][v], i in order.
template <int NW, int NV>
CROSSLAB_FMA_TARGET inline __attribute__((always_inline)) void accumulate(const float* w, int64_t ldw, int64_t len,
                                                                          const float* xp, __m256 (&acc)[NW][NV]) {
  constexpr int64_t width = 8 * NV;
  for (int64_t i = 0; i < len; ++i) {
    __m256 xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = _mm256_loadu_ps(xp + i * width + 8 * v);
#pragma GCC unroll 8
    for (int r = 0; r < NW; ++r) {
      const __m256 wb = _mm256_broadcast_ss(w + r * ldw + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(wb, xv[v], acc[r][v]);
    }
  }
}

// One group's NW x NV sums over a span of k: from zero at k's start, else from `carry`; at k's
// end into Y for the group's `valid` X rows (row b at y + b * ldy, the tile's W rows side by
// side, through a staging block), else back to `carry`.
template <int NW, int NV>
CROSSLAB_FMA_TARGET inline void groupSpan(const float* w, int64_t ldw, int64_t len, const float* xp, bool first,
                                          bool last, float* carry, int64_t valid, float* y, int64_t ldy) {
  __m256 acc[NW][NV];
#pragma GCC unroll 8
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(carry + (r * NV + v) * 8);
  accumulate<NW, NV>(w, ldw, len, xp, acc);
  if (!last) {
#pragma GCC unroll 8
    for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm256_storeu_ps(carry + (r * NV + v) * 8, acc[r][v]);
    return;
  }
  alignas(32) float st[NW][8 * NV];
#pragma GCC unroll 8
  for (int r = 0; r < NW; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm256_store_ps(&st[r][8 * v], acc[r][v]);
  for (int64_t b = 0; b < valid; ++b)
#pragma GCC unroll 8
    for (int r = 0; r < NW; ++r) y[b * ldy + r] = st[r][b];
}

// NW rows of W (w0 the first) against every group of X (n rows), over k's slices: each slice of
// W read (widened, for bf16) once for all the groups. Full groups take four vectors; a last
// group of 16 rows or fewer, two.
template <int NW, class T>
CROSSLAB_FMA_TARGET void tileRows(const T* w0, int64_t k, const float* xp, int64_t n, float* y, int64_t ldy,
                                  float* carry) {
  constexpr bool f32 = std::is_same_v<T, float>;
  alignas(32) float wide[f32 ? 1 : NW * kSlice];
  const int64_t span = f32 ? k : kSlice;
  for (int64_t c = 0; c < k; c += span) {
    const int64_t len = std::min(span, k - c);
    const float* ws = nullptr;
    int64_t ldw = k;
    if constexpr (f32) {
      ws = w0 + c;
    } else {
      const int64_t len8 = len / 8 * 8;
#pragma GCC unroll 8
      for (int r = 0; r < NW; ++r) {
        const T* src = w0 + r * k + c;
        float* dst = wide + r * kSlice;
        int64_t i = 0;
        for (; i < len8; i += 8) _mm256_store_ps(dst + i, simd::load8(src + i));
        for (; i < len; ++i) dst[i] = simd::toFloat(src[i]);
      }
      ws = wide;
      ldw = kSlice;
    }
    const bool first = c == 0, last = c + len == k;
    for (int64_t g = 0; g * kGroup < n; ++g) {
      const int64_t rows = std::min(kGroup, n - g * kGroup);
      const float* xg = xp + g * kGroup * k + c * pad16(rows);
      float* cg = carry + g * NW * kGroup;
      float* yg = y + g * kGroup * ldy;
      if (pad16(rows) == kGroup)
        groupSpan<NW, 4>(ws, ldw, len, xg, first, last, cg, rows, yg, ldy);
      else
        groupSpan<NW, 2>(ws, ldw, len, xg, first, last, cg, rows, yg, ldy);
    }
  }
}

// Tiles of three W rows (twelve sums against four vectors of X: with the broadcast W value,
// GCC keeps three of the X vectors in registers and has the FMAs read the fourth), or of six
// with one group of 16 rows (two vectors); the rows left over one at a time.
template <class T>
void packedRows(const T* w, int64_t rows, int64_t k, const float* xp, int64_t n, float* y, int64_t ldy) {
  thread_local std::vector<float> carry;  // per group a tile's sums, while k runs past a slice
  const size_t need = size_t((n + kGroup - 1) / kGroup * 6 * kGroup);
  if (carry.size() < need) carry.resize(need);
  const auto tiles = [&](auto nw) {
    constexpr int NW = decltype(nw)::value;
    int64_t r = 0;
    for (; r + NW <= rows; r += NW) tileRows<NW>(w + r * k, k, xp, n, y + r, ldy, carry.data());
    for (; r < rows; ++r) tileRows<1>(w + r * k, k, xp, n, y + r, ldy, carry.data());
  };
  if (n <= 16)
    tiles(std::integral_constant<int, 6>{});
  else
    tiles(std::integral_constant<int, 3>{});
}

}  // namespace

namespace detail {
bool avx2PackedAvailable() {
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available && simd::kernelCap.load(std::memory_order_relaxed) < 2;
}
void matmulPackedAvx2(const float* w, int64_t rows, int64_t k, const float* xp, int64_t n, float* y, int64_t ldy) {
  packedRows(w, rows, k, xp, n, y, ldy);
}
void matmulPackedAvx2(const uint16_t* w, int64_t rows, int64_t k, const float* xp, int64_t n, float* y,
                      int64_t ldy) {
  packedRows(w, rows, k, xp, n, y, ldy);
}
}  // namespace detail

}  // namespace crosslab::model
