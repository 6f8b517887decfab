// Attention rows (core/model/cpu_attention.h): the fused decode step's scores and weighted
// values per (row, kv head), on the kernels' shared intrinsics (cpu_simd.h).
#include "core/model/cpu_attention.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/model/cpu_matmul.h"
#include "core/model/cpu_simd.h"

namespace crosslab::model {
namespace {

using simd::load16Any;
using simd::load32;
using simd::storeMasked;
using simd::sum16;
using simd::sum16x16;
using simd::sum16x4;

thread_local int64_t tReadAheadLines = 0;  // readAheadLinesIssued()

// A ReadAhead range, prefetched (hint T1: into L2) as a kernel reads its own rows: pace(n), as
// it reads n more bytes, issues each line of the range's first n more bytes not issued yet, so
// a call that reads as many bytes as the range holds has issued every line of it, each once,
// by the time it returns. Callers pace the bytes their first pass over the rows reads (later
// passes, for more heads, read them again from cache and pace the rest of a longer range).
class Ahead {
 public:
  explicit Ahead(ReadAhead r)
      : line_(reinterpret_cast<uintptr_t>(r.data) & ~uintptr_t(63)),
        due_(reinterpret_cast<uintptr_t>(r.data)),
        end_(r.data && r.bytes > 0 ? reinterpret_cast<uintptr_t>(r.data) + uintptr_t(r.bytes) : 0) {}
  ~Ahead() { tReadAheadLines += issued_; }
  Ahead(const Ahead&) = delete;
  Ahead& operator=(const Ahead&) = delete;
  void pace(int64_t bytes) {
    if (line_ >= end_) return;
    due_ = std::min(end_, due_ + uintptr_t(bytes));
    for (; line_ < due_; line_ += 64, ++issued_) _mm_prefetch(reinterpret_cast<const char*>(line_), _MM_HINT_T1);
  }

 private:
  uintptr_t line_, due_, end_;  // the next line to issue; the range's bytes paid for; its end
  int64_t issued_ = 0;
};

using simd::toFloat;

// Grouped-query attention: the R query heads that share a kv head read each cached row from
// memory once (loaded and, for bf16, widened once, then used R times; bf16 scores for R <= 2
// load a block of sixteen rows per head, the second time from L1). Per head the arithmetic is
// that of one head alone: the same multiply-adds in the same order and one order of horizontal
// sums (cpu_simd.h), so the result is bit-identical.

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

// Sixteen cached rows for one head: their sixteen dot products reduced as one vector. Paces
// `ahead` (when given) by each step's sixteen pieces of rows, not a large hd's whole block at once.
template <class D>
CROSSLAB_BF16_TARGET inline void dotRows16(const typename D::Q* q, const typename D::K* row, int64_t hd, float* s,
                                           Ahead* ahead) {
  __m512 a[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) a[i] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += D::kStep) {
    if (ahead) ahead->pace(16 * std::min(D::kStep, hd - d) * int64_t(sizeof(typename D::K)));
    const auto qv = D::load(q + d, hd - d);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = D::madd(a[i], qv, D::load(row + i * hd + d, hd - d));
  }
  _mm512_storeu_ps(s, sum16x16(a));
}

template <class D, int R>
CROSSLAB_BF16_TARGET void dotRowsHeads(const typename D::Q* q, const typename D::K* k, int64_t len, int64_t hd, float* s,
                                       int64_t ss, Ahead& ahead) {
  const int64_t rowBytes = hd * int64_t(sizeof(typename D::K));
  int64_t t = 0;
  // bf16 pairs, one or two heads: sixteen rows at a time, head by head (the block's 1-4 KB of
  // rows stay in L1 for the second head): per row one multiply-add per 32 values of hd and
  // 45 / 16 reducing instructions, against 14 / 4. Not for fp32 products nor four heads: each
  // head loads the rows again, and there it measured no faster (matmul_bench --attention).
  if constexpr (std::is_same_v<D, Bf16PairScores> && R <= 2)
    for (; t + 16 <= len; t += 16)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) dotRows16<D>(q + r * hd, k + t * hd, hd, s + r * ss + t, r == 0 ? &ahead : nullptr);
  for (; t + 4 <= len; t += 4) {
    ahead.pace(4 * rowBytes);
    dotRowsBlock<D, R>(q, k + t * hd, hd, s + t, ss);
  }
  for (; t < len; ++t) {
    ahead.pace(rowBytes);
    dotRowsOne<D, R>(q, k + t * hd, hd, s + t, ss);
  }
}

template <class D>
CROSSLAB_BF16_TARGET void dotRowsKernel(const typename D::Q* q, int64_t heads, const typename D::K* k, int64_t len,
                                        int64_t hd, float* s, int64_t ss, ReadAhead next) {
  Ahead ahead(next);
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) dotRowsHeads<D, 4>(q + h * hd, k, len, hd, s + h * ss, ss, ahead);
  if (heads - h >= 2) {
    dotRowsHeads<D, 2>(q + h * hd, k, len, hd, s + h * ss, ss, ahead);
    h += 2;
  }
  if (h < heads) dotRowsHeads<D, 1>(q + h * hd, k, len, hd, s + h * ss, ss, ahead);
}

// bf16 weights and values (a bf16 model's probabilities are bf16 after the softmax's rounding):
// VDPBF16PS on pairs of cached rows, t and t + 1 interleaved per value (the two exact products
// added in turn, t + 1 first, in fp32), 32 values of a head per two instructions. The
// accumulators hold the values in the interleave's lane order (lane j of the low half: value
// 8 (j / 4) + j % 4 of the 32 from d0; of the high half: 4 more), permuted from and back to
// `out` once.
template <int R>
CROSSLAB_BF16_TARGET inline void weightedBf16Block(const uint16_t* p, int64_t ps, const uint16_t* v, int64_t len,
                                                   int64_t hd, int64_t d0, float* out, Ahead& ahead) {
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
  const int64_t valid = hd - d0, rowBytes = std::min<int64_t>(32, valid) * 2;  // of each cached row read here
  __m512 lo[R], hi[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 o0 = load16Any(out + r * hd + d0, valid), o1 = load16Any(out + r * hd + d0 + 16, valid - 16);
    lo[r] = _mm512_permutex2var_ps(o0, iLo, o1);
    hi[r] = _mm512_permutex2var_ps(o0, iHi, o1);
  }
  // Two sets of accumulators, pairs of rows taken in turn by each (a multiply-add's latency is
  // several of its issue slots), summed at the end.
  __m512 lo2[R], hi2[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) lo2[r] = hi2[r] = _mm512_setzero_ps();
  const auto step = [&](int64_t t, bool last, __m512* l, __m512* h) CROSSLAB_BF16_TARGET {
    const __m512i a = (__m512i)load32(v + t * hd + d0, valid);
    const __m512i b = last ? _mm512_setzero_si512() : (__m512i)load32(v + (t + 1) * hd + d0, valid);
    const __m512bh il = (__m512bh)_mm512_unpacklo_epi16(a, b), ih = (__m512bh)_mm512_unpackhi_epi16(a, b);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      // p[t] and p[t + 1] as one 32-bit lane (little-endian: t low), broadcast from memory
      uint32_t pair = p[r * ps + t];
      if (!last) std::memcpy(&pair, p + r * ps + t, sizeof pair);
      const __m512bh pp = (__m512bh)_mm512_set1_epi32(int32_t(pair));
      l[r] = _mm512_dpbf16_ps(l[r], pp, il);
      h[r] = _mm512_dpbf16_ps(h[r], pp, ih);
    }
  };
  int64_t t = 0;
  for (; t + 4 <= len; t += 4) {
    ahead.pace(4 * rowBytes);
    step(t, false, lo, hi);
    step(t + 2, false, lo2, hi2);
  }
  if (t + 2 <= len) {
    ahead.pace(2 * rowBytes);
    step(t, false, lo, hi);
    t += 2;
  }
  if (t < len) {
    ahead.pace(rowBytes);
    step(t, true, lo2, hi2);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm512_add_ps(lo[r], lo2[r]);
    hi[r] = _mm512_add_ps(hi[r], hi2[r]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    storeMasked(out + r * hd + d0, _mm512_permutex2var_ps(lo[r], iB0, hi[r]), valid);
    storeMasked(out + r * hd + d0 + 16, _mm512_permutex2var_ps(lo[r], iB1, hi[r]), valid - 16);
  }
}

template <int R>
CROSSLAB_BF16_TARGET void weightedBf16Heads(const uint16_t* p, int64_t ps, const uint16_t* v, int64_t len, int64_t hd,
                                            float* out, Ahead& ahead) {
  for (int64_t d0 = 0; d0 < hd; d0 += 32) weightedBf16Block<R>(p, ps, v, len, hd, d0, out, ahead);
}

CROSSLAB_BF16_TARGET void weightedBf16Kernel(const uint16_t* p, int64_t heads, int64_t ps, const uint16_t* v,
                                             int64_t len, int64_t hd, float* out, ReadAhead next) {
  Ahead ahead(next);
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) weightedBf16Heads<4>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
  if (heads - h >= 2) {
    weightedBf16Heads<2>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
    h += 2;
  }
  if (h < heads) weightedBf16Heads<1>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
}

template <class T, int R, int C>
CROSSLAB_BF16_TARGET inline void weightedRowsBlock(const float* p, int64_t ps, const T* v, int64_t len, int64_t hd,
                                                   int64_t d0, float* out, Ahead& ahead) {
  __m512 acc[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[r][c] = load16Any(out + r * hd + d0 + 16 * c, hd - d0 - 16 * c);
  const int64_t rowBytes = std::min<int64_t>(16 * C, hd - d0) * int64_t(sizeof(T));  // of each cached row read here
  for (int64_t t = 0; t < len; ++t) {
    ahead.pace(rowBytes);
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
                                            float* out, Ahead& ahead) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch (std::min<int64_t>(4, (hd - d0 + 15) / 16)) {
      case 4: weightedRowsBlock<T, R, 4>(p, ps, v, len, hd, d0, out, ahead); break;
      case 3: weightedRowsBlock<T, R, 3>(p, ps, v, len, hd, d0, out, ahead); break;
      case 2: weightedRowsBlock<T, R, 2>(p, ps, v, len, hd, d0, out, ahead); break;
      default: weightedRowsBlock<T, R, 1>(p, ps, v, len, hd, d0, out, ahead); break;
    }
  }
}

template <class T>
CROSSLAB_BF16_TARGET void weightedRowsKernel(const float* p, int64_t heads, int64_t ps, const T* v, int64_t len,
                                             int64_t hd, float* out, ReadAhead next) {
  Ahead ahead(next);
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) weightedRowsHeads<T, 4>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
  if (heads - h >= 2) {
    weightedRowsHeads<T, 2>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
    h += 2;
  }
  if (h < heads) weightedRowsHeads<T, 1>(p + h * ps, ps, v, len, hd, out + h * hd, ahead);
}

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

// Without AVX-512, on a CPU with AVX2: the portable loops' sums bit for bit, eight at a time.
// Scores: eight positions a lane each, every lane's sum over d in order (an 8 x 8 block of keys
// transposed so that one vector holds eight positions' values at one d).

// kt[d * 8 + i] = row i's value at d, for eight cached rows and every d (k: the first row).
template <class T>
CROSSLAB_AVX2_TARGET void transposeRows8(const T* k, int64_t hd, float* kt) {
  const int64_t hd8 = hd / 8 * 8;
  for (int64_t d0 = 0; d0 < hd8; d0 += 8) {
    __m256 r[8];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = simd::load8(k + i * hd + d0);
    simd::transpose8(r);  // r[j]: the eight rows' values at d0 + j
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm256_store_ps(kt + (d0 + j) * 8, r[j]);
  }
  for (int64_t d = hd8; d < hd; ++d)
    #pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) kt[d * 8 + i] = toFloat(k[i * hd + d]);
}

// One head's scores for B blocks of eight rows, transposed (B × [hd][8]; bf16 widened): a lane
// per row, each summed over d in order; B independent sums so that the adds do not wait on each
// other.
template <class T>
struct KeyBlocks {
  const T* kt;
  int64_t hd;
  CROSSLAB_AVX2_TARGET __m256 at(int64_t d, int b) const { return simd::load8(kt + (b * hd + d) * 8); }
};
template <int B, class T, class Step = simd::NoStep>
CROSSLAB_AVX2_TARGET inline void scoreBlocks(const float* qh, const T* kt, int64_t hd, float* sh, const Step& step = {}) {
  simd::broadcastSums<B>(KeyBlocks<T>{kt, hd}, hd, qh, sh, step);
}
// One to four blocks (n) of scores. Inlined by force: GCC otherwise calls it once per group.
template <class T, class Step>
CROSSLAB_AVX2_TARGET inline __attribute__((always_inline)) void scoreGroup(int n, const float* qh, const T* kt,
                                                                           int64_t hd, float* sh, const Step& step) {
  switch (n) {
    case 4: scoreBlocks<4>(qh, kt, hd, sh, step); break;
    case 3: scoreBlocks<3>(qh, kt, hd, sh, step); break;
    case 2: scoreBlocks<2>(qh, kt, hd, sh, step); break;
    default: scoreBlocks<1>(qh, kt, hd, sh, step); break;
  }
}

// Scores: the cached rows transposed eight at a time (up to four blocks, once for all the
// heads), then each head's scores a lane per row.
template <class T>
CROSSLAB_AVX2_TARGET void dotRowsAvx2(const float* q, int64_t heads, const T* k, int64_t len, int64_t hd, float* s,
                                      int64_t ss) {
  constexpr int kBlocks = 4;
  const int64_t len8 = len / 8 * 8;
  struct alignas(32) Lanes { float v[8]; };
  thread_local std::vector<Lanes> transposed;  // kBlocks × [hd][8] floats
  if (int64_t(transposed.size()) < kBlocks * hd) transposed.resize(size_t(kBlocks * hd));
  float* kt = reinterpret_cast<float*>(transposed.data());
  for (int64_t t0 = 0; t0 < len8; t0 += 8 * kBlocks) {
    const int blocks = int(std::min<int64_t>(kBlocks, (len8 - t0) / 8));
    for (int b = 0; b < blocks; ++b) transposeRows8(k + (t0 + 8 * b) * hd, hd, kt + b * hd * 8);
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * hd;
      scoreGroup(blocks, qh, kt, hd, s + h * ss + t0, simd::NoStep{});
    }
  }
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = len8; t < len; ++t) {
      float acc = 0;
      for (int64_t d = 0; d < hd; ++d) acc += q[h * hd + d] * toFloat(k[t * hd + d]);
      s[h * ss + t] = acc;
    }
}

// H heads' outputs d0 … d0 + 8W over all positions, in registers: each cached row read once for
// the H heads, each output summed over t in order.
template <int H, int W, class T>
CROSSLAB_AVX2_TARGET inline void weightedSpan(const float* p, int64_t ps, const T* v, int64_t len, int64_t hd, float* out,
                                              int64_t d0, Ahead& ahead) {
  __m256 a[H][W];
  #pragma GCC unroll 8
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 8
    for (int j = 0; j < W; ++j) a[h][j] = _mm256_loadu_ps(out + h * hd + d0 + 8 * j);
  for (int64_t t = 0; t < len; ++t) {
    // what they read here, every second position (every sixteenth until 2026-12-07: bursts of
    // 32 requested lines, ~18% of weightedSpan's samples)
    if (t % 2 == 0) ahead.pace(std::min<int64_t>(2, len - t) * 8 * W * int64_t(sizeof(T)));
    const T* vt = v + t * hd + d0;
    __m256 x[W];
    #pragma GCC unroll 8
    for (int j = 0; j < W; ++j) x[j] = simd::load8(vt + 8 * j);
    #pragma GCC unroll 8
    for (int h = 0; h < H; ++h) {
      const __m256 w = _mm256_set1_ps(p[h * ps + t]);
      #pragma GCC unroll 8
      for (int j = 0; j < W; ++j) a[h][j] = _mm256_add_ps(a[h][j], _mm256_mul_ps(w, x[j]));
    }
  }
  #pragma GCC unroll 8
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 8
    for (int j = 0; j < W; ++j) _mm256_storeu_ps(out + h * hd + d0 + 8 * j, a[h][j]);
}

// Weighted values: each output's sum over the positions in order; two heads at a time, 32 (then
// 8) outputs of each held in registers over all positions.
template <class T>
CROSSLAB_AVX2_TARGET void weightedRowsAvx2(const float* p, int64_t heads, int64_t ps, const T* v, int64_t len,
                                           int64_t hd, float* out, ReadAhead next) {
  Ahead ahead(next);
  const int64_t hd8 = hd / 8 * 8;
  for (int64_t h = 0; h < heads;) {
    const float* ph = p + h * ps;
    float* oh = out + h * hd;
    const bool two = h + 1 < heads;
    int64_t d0 = 0;
    for (; d0 + 32 <= hd; d0 += 32)
      two ? weightedSpan<2, 4>(ph, ps, v, len, hd, oh, d0, ahead) : weightedSpan<1, 4>(ph, ps, v, len, hd, oh, d0, ahead);
    for (; d0 < hd8; d0 += 8)
      two ? weightedSpan<2, 1>(ph, ps, v, len, hd, oh, d0, ahead) : weightedSpan<1, 1>(ph, ps, v, len, hd, oh, d0, ahead);
    // The outputs past the last eight, if any: without the check GCC kept the loop over t with
    // nothing in it (hd 32: 4.6% of `perf`'s samples in a 32-stream demo-model run)
    if (hd8 < hd)
      for (int64_t g = h; g < h + (two ? 2 : 1); ++g)
        for (int64_t t = 0; t < len; ++t)
          for (int64_t d = hd8; d < hd; ++d) out[g * hd + d] += p[g * ps + t] * toFloat(v[t * hd + d]);
    h += two ? 2 : 1;
  }
}

// Scores from keys kept in blocks (cpu_attention.h): no transpose; four blocks at a time (read
// once for all the heads), a last partial block's lanes past len computed and dropped.
template <class T>
CROSSLAB_AVX2_TARGET void dotKeyBlocksAvx2(const float* q, int64_t heads, const T* kb, int64_t len, int64_t hd,
                                           float* s, int64_t ss, ReadAhead next) {
  Ahead ahead(next);
  constexpr int kBlocks = 4;
  const int64_t blocks = (len + 7) / 8;
  for (int64_t b0 = 0; b0 < blocks; b0 += kBlocks) {
    const int n = int(std::min<int64_t>(kBlocks, blocks - b0));
    const T* kt = kb + b0 * hd * 8;
    const int64_t t0 = 8 * b0, valid = std::min<int64_t>(8 * n, len - t0);
    // The first head's pass paces the read-ahead by what each step of d reads (a line or two),
    // not a group's 64 lines at once, which filled the core's queue of misses and stalled its
    // own loads (`perf`: ~29% of this kernel's samples on the bursts' prefetches).
    const auto pace = [&ahead, bytes = valid * int64_t(sizeof(T))] { ahead.pace(bytes); };
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * hd;
      alignas(32) float part[8 * kBlocks];
      float* sh = valid == 8 * n ? s + h * ss + t0 : part;
      h == 0 ? scoreGroup(n, qh, kt, hd, sh, pace) : scoreGroup(n, qh, kt, hd, sh, simd::NoStep{});
      if (sh == part) std::copy(part, part + valid, s + h * ss + t0);
    }
  }
}

template <class T>
void dotKeyBlocksPortable(const float* q, int64_t heads, const T* kb, int64_t len, int64_t hd, float* s, int64_t ss) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t t = 0; t < len; ++t) {
      const T* kt = kb + (t / 8) * hd * 8 + t % 8;
      float acc = 0;
      for (int64_t d = 0; d < hd; ++d) acc += q[h * hd + d] * toFloat(kt[d * 8]);
      s[h * ss + t] = acc;
    }
}

template <class T>
void dotRowsNoKernels(const float* q, int64_t heads, const T* k, int64_t len, int64_t hd, float* s, int64_t ss) {
  simd::avx2Available() ? dotRowsAvx2(q, heads, k, len, hd, s, ss) : dotRowsPortable(q, heads, k, len, hd, s, ss);
}
template <class T>
void weightedRowsNoKernels(const float* p, int64_t heads, int64_t ps, const T* v, int64_t len, int64_t hd, float* out,
                           ReadAhead next) {
  simd::avx2Available() ? weightedRowsAvx2(p, heads, ps, v, len, hd, out, next)
                        : weightedRowsPortable(p, heads, ps, v, len, hd, out);
}

}  // namespace

int64_t readAheadLinesIssued() { return tReadAheadLines; }

bool keyBlocksHelp() { return !bf16KernelsAvailable() && simd::avx2Available(); }

namespace {
template <class T>
void copyBlocks(const T* k, int64_t from, int64_t to, int64_t hd, T* kb) {
  for (int64_t t = from; t < to; ++t) {
    T* lane = kb + (t / 8) * hd * 8 + t % 8;
    for (int64_t d = 0; d < hd; ++d) lane[d * 8] = k[t * hd + d];
  }
}
template <class T>
void dotBlocks(const float* q, int64_t heads, const T* kb, int64_t len, int64_t hd, float* s, int64_t ss,
               ReadAhead next) {
  simd::avx2Available() ? dotKeyBlocksAvx2(q, heads, kb, len, hd, s, ss, next)
                        : dotKeyBlocksPortable(q, heads, kb, len, hd, s, ss);
}
}  // namespace

void copyToKeyBlocks(const float* k, int64_t from, int64_t to, int64_t hd, float* kb) {
  copyBlocks(k, from, to, hd, kb);
}
void copyToKeyBlocks(const uint16_t* k, int64_t from, int64_t to, int64_t hd, uint16_t* kb) {
  copyBlocks(k, from, to, hd, kb);
}
void dotKeyBlocks(const float* q, int64_t heads, const float* kb, int64_t len, int64_t hd, float* s, int64_t ss,
                  ReadAhead next) {
  dotBlocks(q, heads, kb, len, hd, s, ss, next);
}
void dotKeyBlocks(const float* q, int64_t heads, const uint16_t* kb, int64_t len, int64_t hd, float* s, int64_t ss,
                  ReadAhead next) {
  dotBlocks(q, heads, kb, len, hd, s, ss, next);
}

// The fp32 rows need only AVX-512F, but share the bf16 kernels' target: one check.
void dotRows(const float* q, int64_t heads, const float* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next) {
  bf16KernelsAvailable() ? dotRowsKernel<WidenedScores<float>>(q, heads, k, len, hd, s, ss, next)
                         : dotRowsNoKernels(q, heads, k, len, hd, s, ss);
}
void dotRows(const float* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next) {
  bf16KernelsAvailable() ? dotRowsKernel<WidenedScores<uint16_t>>(q, heads, k, len, hd, s, ss, next)
                         : dotRowsNoKernels(q, heads, k, len, hd, s, ss);
}
void dotRows(const uint16_t* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next) {
  if (bf16KernelsAvailable()) return dotRowsKernel<Bf16PairScores>(q, heads, k, len, hd, s, ss, next);
  std::vector<float> qf(size_t(heads * hd));  // exact: bf16 widened
  for (size_t i = 0; i < qf.size(); ++i) qf[i] = toFloat(q[i]);
  dotRowsNoKernels(qf.data(), heads, k, len, hd, s, ss);
}
void weightedRows(const uint16_t* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next) {
  if (bf16KernelsAvailable()) return weightedBf16Kernel(p, heads, ps, v, len, hd, out, next);
  std::vector<float> pf(size_t(heads * ps));  // exact: bf16 widened
  for (size_t i = 0; i < pf.size(); ++i) pf[i] = toFloat(p[i]);
  weightedRowsNoKernels(pf.data(), heads, ps, v, len, hd, out, next);
}
void weightedRows(const float* p, int64_t heads, int64_t ps, const float* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next) {
  bf16KernelsAvailable() ? weightedRowsKernel(p, heads, ps, v, len, hd, out, next)
                         : weightedRowsNoKernels(p, heads, ps, v, len, hd, out, next);
}
void weightedRows(const float* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next) {
  bf16KernelsAvailable() ? weightedRowsKernel(p, heads, ps, v, len, hd, out, next)
                         : weightedRowsNoKernels(p, heads, ps, v, len, hd, out, next);
}

}  // namespace crosslab::model
