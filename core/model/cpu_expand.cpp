// The LoRA expands declared in cpu_matmul.h (matmulTransposed, expandBf16 and its packing): a
// product with a small k (the adapter's rank) into many outputs, added into a projection's
// output as ExpandStore says. AVX-512 kernels where the CPU has AVX512-BF16, AVX2 loops where it
// has AVX2, a portable loop otherwise; the AVX2 and portable loops give the same sums.
#include "core/model/cpu_matmul.h"

#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_simd.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace crosslab::model {
namespace {

using simd::avx2Available;
using simd::laneMask;
using simd::load16Any;
using simd::load8;
using simd::roundBf16x16;
using simd::toFloat;

// ---- AVX-512: a transposed small-k product ------------------------------------------

// An expand's sums into Y's `left` values from y on (none for left <= 0), as `S` says.
template <ExpandStore S>
CROSSLAB_F32_TARGET inline void putSums(float* y, __m512 s, int64_t left) {
  if (left <= 0) return;
  const __mmask16 m = laneMask(left);
  if constexpr (S == ExpandStore::Set) {
    _mm512_mask_storeu_ps(y, m, s);
  } else if constexpr (S == ExpandStore::Add) {
    _mm512_mask_storeu_ps(y, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y), s));
  } else {
    _mm512_mask_storeu_ps(y, m, roundBf16x16(_mm512_add_ps(_mm512_maskz_loadu_ps(m, y), roundBf16x16(s))));
  }
}

template <ExpandStore S, class T>
CROSSLAB_BF16_TARGET void transposedKernel(const T* wt, int64_t k, int64_t out, const float* x, int64_t ldx, int64_t n,
                                           float* y, int64_t ldy) {
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * ldx;
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
      putSums<S>(yb + j, a0, w);
      putSums<S>(yb + j + 16, a1, w - 16);
      putSums<S>(yb + j + 32, a2, w - 32);
      putSums<S>(yb + j + 48, a3, w - 48);
    }
  }
}

// ---- a bf16 LoRA expand on pairs of the rank -------------------------------------------
//
// packExpandBf16's layout: blocks of 64 outputs (the last one zero padded), within a block the
// pairs of i in order, within a pair 64 lanes of 32 bits, lane l holding B[j0 + l, 2p + 1] in
// its low half and B[j0 + l, 2p] in its high half (zero past k). VDPBF16PS adds a lane's high
// product first, then its low one (Intel's SDM), so the sums run over i in order.

constexpr int64_t kExpandBlock = 64;

int64_t expandPairs(int64_t k) { return (k + 1) / 2; }

// Where B[j, i] lies in the packed layout.
int64_t expandIndex(int64_t k, int64_t j, int64_t i) {
  return ((j / kExpandBlock) * expandPairs(k) + i / 2) * 2 * kExpandBlock + 2 * (j % kExpandBlock) + (i % 2 ? 0 : 1);
}

// x[2p] (high half) and x[2p + 1] (low half, 0 past k) as bf16 bits in one 32-bit lane; x's
// values are bf16, so the top half of each float's bits is the value.
uint32_t expandPair(const float* x, int64_t k, int64_t p) {
  uint32_t hi, lo = 0;
  std::memcpy(&hi, x + 2 * p, sizeof hi);
  if (2 * p + 1 < k) std::memcpy(&lo, x + 2 * p + 1, sizeof lo);
  return (hi & 0xffff0000u) | (lo >> 16);
}

template <ExpandStore S>
CROSSLAB_BF16_TARGET void expandKernel(const uint16_t* packed, int64_t k, int64_t out, const float* x, int64_t ldx,
                                       int64_t n, float* y, int64_t ldy) {
  const int64_t pairs = expandPairs(k);
  constexpr int64_t kMaxPairs = 128;  // ranks up to 256 from the stack, larger ones in parts
  uint32_t xp[kMaxPairs];
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * ldx;
    float* yb = y + b * ldy;
    for (int64_t j = 0; j < out; j += kExpandBlock) {
      const uint16_t* blk = packed + (j / kExpandBlock) * pairs * 2 * kExpandBlock;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
      for (int64_t p0 = 0; p0 < pairs; p0 += kMaxPairs) {
        const int64_t pn = std::min(kMaxPairs, pairs - p0);
        if (j == 0 || pairs > kMaxPairs)
          for (int64_t p = 0; p < pn; ++p) xp[p] = expandPair(xb, k, p0 + p);
        for (int64_t p = 0; p < pn; ++p) {
          const __m512bh s = (__m512bh)_mm512_set1_epi32(int32_t(xp[p]));
          const uint16_t* w = blk + (p0 + p) * 2 * kExpandBlock;
          a0 = _mm512_dpbf16_ps(a0, s, (__m512bh)_mm512_loadu_si512(w));
          a1 = _mm512_dpbf16_ps(a1, s, (__m512bh)_mm512_loadu_si512(w + 32));
          a2 = _mm512_dpbf16_ps(a2, s, (__m512bh)_mm512_loadu_si512(w + 64));
          a3 = _mm512_dpbf16_ps(a3, s, (__m512bh)_mm512_loadu_si512(w + 96));
        }
      }
      const int64_t w = out - j;
      putSums<S>(yb + j, a0, w);
      putSums<S>(yb + j + 16, a1, w - 16);
      putSums<S>(yb + j + 32, a2, w - 32);
      putSums<S>(yb + j + 48, a3, w - 48);
    }
  }
}

// ---- without the kernels: AVX2, portable ---------------------------------------------

// A sum into Y as ExpandStore says, without the kernels.
void putSum(float& y, float s, ExpandStore store) {
  if (store == ExpandStore::Set)
    y = s;
  else
    addRound(&y, &s, 1, true, store == ExpandStore::AddRounded);
}

// putSum for n sums at once: one addRound call, not n.
void putSums(float* y, const float* s, int64_t n, ExpandStore store) {
  if (store == ExpandStore::Set)
    std::memcpy(y, s, sizeof(float) * size_t(n));
  else
    addRound(y, s, n, true, store == ExpandStore::AddRounded);
}

template <class T>
void transposedPortable(const T* wt, int64_t k, int64_t out, const float* x, int64_t ldx, int64_t n, float* y,
                        int64_t ldy, ExpandStore store) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < out; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += x[b * ldx + i] * toFloat(wt[i * out + j]);
      putSum(y[b * ldy + j], acc, store);
    }
}

// The kernel's sums without it: each product exact in fp32 (two bf16 values), added in i's order.
void expandPortable(const uint16_t* packed, int64_t k, int64_t out, const float* x, int64_t ldx, int64_t n, float* y,
                    int64_t ldy, ExpandStore store) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < out; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += x[b * ldx + i] * toFloat(packed[expandIndex(k, j, i)]);
      putSum(y[b * ldy + j], acc, store);
    }
}

// The two loops above on a CPU with AVX2, the same bits (each output's sum over i in order, a
// multiply then an add): up to 64 outputs at a time, eight per vector, so up to eight sums are
// in flight — one alone waits 3 cycles on its previous add at every i (the demo model's runtime
// LoRA at 8-32 streams spent a fifth of the step in these loops while they did a single vector).

// Eight outputs' values of one i, group g of eight from an output j on: from Bᵀ [k, out] (fp32 or
// bf16) ...
template <class T>
struct TransposedSource {
  const T* wt;  // Bᵀ's column j
  int64_t out;
  CROSSLAB_AVX2_TARGET __m256 at(int64_t i, int g) const { return load8(wt + i * out + 8 * g); }
};
// ... or from packExpandBf16's layout: within a block of 64 outputs, eight consecutive outputs'
// values of one i lie in eight 32-bit lanes (the high half for an even i, the low half for an
// odd one); blocks are zero padded, so every load of a block stays inside B.
struct PackedSource {
  const uint16_t* block;  // the block of outputs j (a multiple of 64) to j + 63
  CROSSLAB_AVX2_TARGET __m256 at(int64_t i, int g) const {
    const __m256i v =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (i / 2) * 2 * kExpandBlock + 16 * g));
    return _mm256_castsi256_ps(i % 2 ? _mm256_slli_epi32(v, 16) : _mm256_and_si256(v, _mm256_set1_epi32(int32_t(0xffff0000u))));
  }
};

// Y's n <= 64 values from `y` on of one row, from groups of eight (a last one in part: its other
// lanes' loads must stay inside B).
template <class Source>
CROSSLAB_AVX2_TARGET void rowSums(const Source& src, int64_t k, const float* xb, int64_t n, float* y, ExpandStore store) {
  alignas(32) float sums[64];
  switch ((n + 7) / 8) {
    case 1: simd::broadcastSums<1>(src, k, xb, sums); break;
    case 2: simd::broadcastSums<2>(src, k, xb, sums); break;
    case 3: simd::broadcastSums<3>(src, k, xb, sums); break;
    case 4: simd::broadcastSums<4>(src, k, xb, sums); break;
    case 5: simd::broadcastSums<5>(src, k, xb, sums); break;
    case 6: simd::broadcastSums<6>(src, k, xb, sums); break;
    case 7: simd::broadcastSums<7>(src, k, xb, sums); break;
    default: simd::broadcastSums<8>(src, k, xb, sums); break;
  }
  putSums(y, sums, n, store);
}

template <class T>
CROSSLAB_AVX2_TARGET void transposedAvx2(const T* wt, int64_t k, int64_t out, const float* x, int64_t ldx, int64_t n,
                                         float* y, int64_t ldy, ExpandStore store) {
  const int64_t out8 = out / 8 * 8;  // whole vectors; the rest one by one (a vector would read past Bᵀ)
  for (int64_t b = 0; b < n; ++b) {
    const float* xb = x + b * ldx;
    float* yb = y + b * ldy;
    for (int64_t j = 0; j < out8; j += 64)
      rowSums(TransposedSource<T>{wt + j, out}, k, xb, std::min<int64_t>(64, out8 - j), yb + j, store);
    for (int64_t j = out8; j < out; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += xb[i] * toFloat(wt[i * out + j]);
      putSum(yb[j], acc, store);
    }
  }
}

CROSSLAB_AVX2_TARGET void expandAvx2(const uint16_t* packed, int64_t k, int64_t out, const float* x, int64_t ldx,
                                     int64_t n, float* y, int64_t ldy, ExpandStore store) {
  const int64_t blockSize = expandPairs(k) * 2 * kExpandBlock;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < out; j += kExpandBlock)
      rowSums(PackedSource{packed + j / kExpandBlock * blockSize}, k, x + b * ldx, std::min<int64_t>(kExpandBlock, out - j),
              y + b * ldy + j, store);
}

// The AVX-512 kernel (instantiated per store mode, kernel(std::integral_constant<ExpandStore, S>{}))
// where the CPU has AVX512-BF16, else the AVX2 loop, else the portable one.
template <class Kernel, class Avx2, class Portable>
void pickExpand(ExpandStore store, const Kernel& kernel, const Avx2& avx2, const Portable& portable) {
  if (!bf16KernelsAvailable()) return avx2Available() ? avx2() : portable();
  switch (store) {
    case ExpandStore::Set: return kernel(std::integral_constant<ExpandStore, ExpandStore::Set>{});
    case ExpandStore::Add: return kernel(std::integral_constant<ExpandStore, ExpandStore::Add>{});
    case ExpandStore::AddRounded: return kernel(std::integral_constant<ExpandStore, ExpandStore::AddRounded>{});
  }
}

template <class T>
void transposedAny(const T* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                   ExpandStore store, int64_t ldx) {
  if (ldx == 0) ldx = k;
  pickExpand(
      store, [&](auto s) { transposedKernel<decltype(s)::value>(wt, k, out, x, ldx, n, y, ldy); },
      [&] { transposedAvx2(wt, k, out, x, ldx, n, y, ldy, store); },
      [&] { transposedPortable(wt, k, out, x, ldx, n, y, ldy, store); });
}

}  // namespace

void matmulTransposed(const float* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                      ExpandStore store, int64_t ldx) {
  transposedAny(wt, k, out, x, n, y, ldy, store, ldx);
}
void matmulTransposed(const uint16_t* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                      ExpandStore store, int64_t ldx) {
  transposedAny(wt, k, out, x, n, y, ldy, store, ldx);
}

int64_t expandBf16PackedSize(int64_t k, int64_t out) {
  return (out + kExpandBlock - 1) / kExpandBlock * expandPairs(k) * 2 * kExpandBlock;
}

void packExpandBf16(const uint16_t* b, int64_t out, int64_t k, uint16_t* packed) {
  std::fill(packed, packed + expandBf16PackedSize(k, out), uint16_t(0));
  for (int64_t j = 0; j < out; ++j)
    for (int64_t i = 0; i < k; ++i) packed[expandIndex(k, j, i)] = b[j * k + i];
}

void expandBf16(const uint16_t* packed, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                ExpandStore store, int64_t ldx) {
  if (ldx == 0) ldx = k;
  pickExpand(
      store, [&](auto s) { expandKernel<decltype(s)::value>(packed, k, out, x, ldx, n, y, ldy); },
      [&] { expandAvx2(packed, k, out, x, ldx, n, y, ldy, store); },
      [&] { expandPortable(packed, k, out, x, ldx, n, y, ldy, store); });
}

}  // namespace crosslab::model
