// The products without the AVX-512 kernels (core/model/cpu_matmul.h): the portable loop and the
// AVX2 loop that gives its sums bit for bit, eight lanes at a time.
#include "core/model/cpu_matmul.h"
#include "core/model/cpu_simd.h"

#include <algorithm>
#include <type_traits>

namespace crosslab::model {
namespace {

// ---- portable ------------------------------------------------------------------------

using simd::toFloat;

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

// ---- AVX2 without AVX-512: the portable loop's sums, eight lanes a time ------------------
//
// The same operations in the same order as portable() — per lane a product, then an add (no
// FMA: its single rounding would change the bits), the tail in order, then the eight lanes in
// order — so a machine without AVX-512 gets the portable loop's results at vector speed. Four
// W rows against two X rows at a time (eight sums in flight: an add waits 3 cycles on the one
// before in its sum), each X row read once for the four; every X row for a block of W rows
// before the next block, so a batch streams W once, not once per row.

using simd::aheadLinesOf;
using simd::aheadOf;
using simd::avx2Available;
using simd::load8;
using simd::prefetchLine;

template <class T, class X>
CROSSLAB_AVX2_TARGET inline float finishSum(__m256 acc, const T* row, const X* xb, int64_t from, int64_t k) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float s = 0;
  for (int64_t i = from; i < k; ++i) s += toFloat(row[i]) * toFloat(xb[i]);
  for (float a : lanes) s += a;
  return s;
}

// A four-by-two tile's eight sums (four W rows, w0 the first, against x0 then x1: r = a0..a3,
// b0..b3), finished as finishSum finishes each: the tail's products in order, then the lanes in
// order. All eight at once, a sum per vector lane (the lanes transposed), instead of eight
// stores, 64 loads and 64 scalar adds: by count about a third of the loop's instructions at
// k = 128 (the demo model's products) and two thirds at k = 64 (`tiny`'s LM head).
template <class T, class X>
CROSSLAB_AVX2_TARGET inline void finishEight(__m256 (&r)[8], const T* w0, const X* x0, const X* x1, int64_t k8,
                                             int64_t k, float* y0, float* y1) {
  simd::transpose8(r);  // r[l]: lane l of each sum
  __m256 s = _mm256_setzero_ps();
  if (k8 < k) {
    alignas(32) float tails[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int q = 0; q < 4; ++q)
      for (int64_t i = k8; i < k; ++i) {
        tails[q] += toFloat(w0[q * k + i]) * toFloat(x0[i]);
        tails[4 + q] += toFloat(w0[q * k + i]) * toFloat(x1[i]);
      }
    s = _mm256_load_ps(tails);
  }
#pragma GCC unroll 8
  for (int l = 0; l < 8; ++l) s = _mm256_add_ps(s, r[l]);
  _mm_storeu_ps(y0, _mm256_castps256_ps128(s));
  _mm_storeu_ps(y1, _mm256_extractf128_ps(s, 1));
}

// Four W rows' sums against one X row (a single row, or the last of an odd count), finished as
// a four-by-two tile whose second X row is this one again with its sums zero and not kept: the
// bits finishSum gives each, in one vector finish instead of four scalar ones. `taskset -c 1
// matmul_bench --dtypes f32,bf16 --repeats 5 --shapes 128:128:1,384:128:1,964:128:1,2048:768:1,
// 128:128:9`, old and new alternated three times: bf16 at one X row 1.07-1.19x on the three
// k = 128 shapes and at 9 rows (widened, the odd last row) 1.07-1.14x; f32 at one row
// 1.03-1.29x in seven of nine pairs (the other two 0.98x and 0.76x); 2048 x 768 within noise.
template <class T, class X>
CROSSLAB_AVX2_TARGET inline void finishFour(__m256 a0, __m256 a1, __m256 a2, __m256 a3, const T* w0, const X* xb,
                                            int64_t k8, int64_t k, float* y) {
  const __m256 z = _mm256_setzero_ps();
  __m256 sums[8] = {a0, a1, a2, a3, z, z, z, z};
  alignas(16) float unkept[4];
  finishEight(sums, w0, xb, xb, k8, k, y, unkept);
}

// Keeps each value in a register from here on: the compiler otherwise folds a load into every
// product that reads it (`perf annotate`: vmulps (mem) twice per W vector), and four W rows
// against two X rows then issue ten loads per step of k for eight products instead of six. An
// empty asm statement that "changes" the values makes each one load. The same sums; `taskset
// -c 1 matmul_bench`, old and new alternated three times: 32 X rows f32 1.11-1.16x, bf16 from
// fp32 X 1.05-1.08x; 8 and 16 rows within 3%. In `serve_bench` on `small` f32 at 32 streams
// (two threads) no change.
CROSSLAB_AVX2_TARGET inline void inRegisters(__m256& a, __m256& b, __m256& c, __m256& d) {
  __asm__("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d));
}

// Four W rows against two X rows: eight independent sums, each W load used twice. Inlined by
// force: with finishEight's shuffles GCC otherwise calls it once per tile.
template <class T, class X>
CROSSLAB_AVX2_TARGET inline __attribute__((always_inline)) void fourByTwo(const T* w0, int64_t k, const X* x0, float* y0,
                                                                          float* y1) {
  const int64_t k8 = k / 8 * 8;
  const T *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
  const X* x1 = x0 + k;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (int64_t i = 0; i < k8; i += 8) {
    const __m256 u = load8(x0 + i), v = load8(x1 + i);
    __m256 v0 = load8(w0 + i), v1 = load8(w1 + i), v2 = load8(w2 + i), v3 = load8(w3 + i);
    inRegisters(v0, v1, v2, v3);
    a0 = _mm256_add_ps(a0, _mm256_mul_ps(v0, u));
    b0 = _mm256_add_ps(b0, _mm256_mul_ps(v0, v));
    a1 = _mm256_add_ps(a1, _mm256_mul_ps(v1, u));
    b1 = _mm256_add_ps(b1, _mm256_mul_ps(v1, v));
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(v2, u));
    b2 = _mm256_add_ps(b2, _mm256_mul_ps(v2, v));
    a3 = _mm256_add_ps(a3, _mm256_mul_ps(v3, u));
    b3 = _mm256_add_ps(b3, _mm256_mul_ps(v3, v));
  }
  __m256 sums[8] = {a0, a1, a2, a3, b0, b1, b2, b3};
  finishEight(sums, w0, x0, x1, k8, k, y0, y1);
}

// From memory (an LM head, or any matrix of a model larger than the caches) the hardware
// prefetchers fall behind the four-by-two loop: they lose the four rows' streams each time the
// loop turns to the next X pair and the W reads pause, and at one X row the four interleaved
// streams alone do not keep enough lines in flight. So each block of four W rows requests the
// lines of the block kAvx2AheadBlocks further on while it computes, paced over its work: a line
// per 64 bytes of W its first pass reads at one X row, spread over the pairs at more. `taskset
// -c 1 matmul_bench`, the 128256 x 768 LM head, bf16: 1 row 25.8 -> 12.8-14.1 ms, 8 rows
// 51-61 -> 38-41 ms, 32 rows within noise. A matrix that stays in cache gains nothing and pays
// the requests (3-15% on 2048 x 768 warm in L3), so only a share of W of kAvx2AheadMinBytes or
// more reads ahead: every matrix of the peers' `small` preset but its K and V, none of the demo
// model's. Nor an f32 W at one X row: its four streams of fp32 rows keep the hardware prefetch
// busy enough, and the requests only slowed it (`matmul_bench`, one thread, the 1B shapes'
// 2048 x 8192 down projection: 17-18 GB/s with them, 28-29 without; `engine_bench` on the 1B
// shapes in f32, two threads: 5.4 -> 6.0-7.0 tok/s).
constexpr int64_t kAvx2AheadBlocks = 2;
constexpr int64_t kAvx2AheadMinBytes = 512 << 10;
thread_local int64_t tAvx2AheadLines = 0;  // detail::matmulAheadLinesIssued()

// One block's requests: to(line) issues every line before `line` not issued yet.
class BlockAhead {
 public:
  BlockAhead(uintptr_t base, int64_t lines) : base_(base), lines_(lines) {}
  ~BlockAhead() { tAvx2AheadLines += next_; }
  BlockAhead(const BlockAhead&) = delete;
  BlockAhead& operator=(const BlockAhead&) = delete;
  void to(int64_t line) {
    for (line = std::min(line, lines_); next_ < line; ++next_) prefetchLine(base_, next_);
  }
  int64_t next() const { return next_; }

 private:
  uintptr_t base_;
  int64_t lines_, next_ = 0;
};

// A bf16 W against 8+ X rows: each block of four rows is widened to fp32 once per slice of k
// into a buffer that stays in L1, and every X pair reads it there, instead of widening the same
// weights again for every pair (at bf16 the four-by-two loop spends a third of its vector
// operations on that). The buffer's rows are padded 16 floats past their length, so that rows
// of 1 024 values do not lie 4 KB apart (the same cache sets). A k longer than a slice carries
// each pair's eight sums in memory from one slice to the next (stored and loaded as vectors:
// each lane still adds its products in k's order), and the last slice finishes them as
// finishSum does: the same sums, bit for bit. `taskset -c 1 matmul_bench`, bf16, 32 rows:
// 2048 x 768 2.3-3.4 -> 1.8-2.1 ms, 768 x 2048 2.2-2.3 -> 1.8-2.0, the 128256 x 768 LM head
// 139-162 -> 116-129; 8 rows 1.0-1.3x. In the engine less (`batch_bench`, 4 rounds
// alternated, medians): the demo model bf16 1.13x at 8 and 32 streams, `small` bf16 1.0x at 8
// and 1.03x at 32.
constexpr int64_t kWidenFrom = 8;     // X rows
constexpr int64_t kWidenSlice = 1024;  // k values a slice at most: four rows widened = 16 KB
constexpr int64_t kWidenPad = 16;      // floats past each widened row

// One slice [c, c + len) of k for a pair of X rows or a single one.
struct SliceSums {
  const float* wide;  // four widened rows, ld apart, the slice's first value at [0]
  int64_t ld, c, len;
  bool first, last;
  const uint16_t* w0;  // the block's first W row (its tail values are read as they are)
  int64_t k, k8;
};

// A slice's four sums of one X row start from zero at k's first slice, else from `carry`; at
// its end they are finished into y at k's end, else stored to `carry`.
CROSSLAB_AVX2_TARGET inline void startSlice(const SliceSums& sl, const float* carry, __m256& a0, __m256& a1,
                                            __m256& a2, __m256& a3) {
  if (sl.first) {
    a0 = a1 = a2 = a3 = _mm256_setzero_ps();
    return;
  }
  a0 = load8(carry), a1 = load8(carry + 8), a2 = load8(carry + 16), a3 = load8(carry + 24);
}

template <class X>
CROSSLAB_AVX2_TARGET inline void endSlice(const SliceSums& sl, const X* xb, __m256 a0, __m256 a1, __m256 a2,
                                          __m256 a3, float* carry, float* yb) {
  if (sl.last) {
    finishFour(a0, a1, a2, a3, sl.w0, xb, sl.k8, sl.k, yb);
    return;
  }
  _mm256_storeu_ps(carry, a0), _mm256_storeu_ps(carry + 8, a1), _mm256_storeu_ps(carry + 16, a2);
  _mm256_storeu_ps(carry + 24, a3);
}

template <class X>
CROSSLAB_AVX2_TARGET inline void widenedFourByTwo(const SliceSums& sl, const X* x0, const X* x1, float* carry,
                                                  float* y0, float* y1) {
  const float *v0 = sl.wide, *v1 = v0 + sl.ld, *v2 = v1 + sl.ld, *v3 = v2 + sl.ld;
  __m256 a0, a1, a2, a3, b0, b1, b2, b3;
  startSlice(sl, carry, a0, a1, a2, a3);
  startSlice(sl, carry + 32, b0, b1, b2, b3);
  const X *u0 = x0 + sl.c, *u1 = x1 + sl.c;
  for (int64_t i = 0; i < sl.len; i += 8) {
    const __m256 u = load8(u0 + i), v = load8(u1 + i);
    __m256 m0 = _mm256_load_ps(v0 + i), m1 = _mm256_load_ps(v1 + i), m2 = _mm256_load_ps(v2 + i),
           m3 = _mm256_load_ps(v3 + i);
    inRegisters(m0, m1, m2, m3);
    a0 = _mm256_add_ps(a0, _mm256_mul_ps(m0, u));
    b0 = _mm256_add_ps(b0, _mm256_mul_ps(m0, v));
    a1 = _mm256_add_ps(a1, _mm256_mul_ps(m1, u));
    b1 = _mm256_add_ps(b1, _mm256_mul_ps(m1, v));
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(m2, u));
    b2 = _mm256_add_ps(b2, _mm256_mul_ps(m2, v));
    a3 = _mm256_add_ps(a3, _mm256_mul_ps(m3, u));
    b3 = _mm256_add_ps(b3, _mm256_mul_ps(m3, v));
  }
  if (sl.last) {
    __m256 sums[8] = {a0, a1, a2, a3, b0, b1, b2, b3};
    finishEight(sums, sl.w0, x0, x1, sl.k8, sl.k, y0, y1);
    return;
  }
  endSlice(sl, x0, a0, a1, a2, a3, carry, y0);
  endSlice(sl, x1, b0, b1, b2, b3, carry + 32, y1);
}

template <class X>
CROSSLAB_AVX2_TARGET inline void widenedFourByOne(const SliceSums& sl, const X* x0, float* carry, float* y0) {
  const float *v0 = sl.wide, *v1 = v0 + sl.ld, *v2 = v1 + sl.ld, *v3 = v2 + sl.ld;
  __m256 a0, a1, a2, a3;
  startSlice(sl, carry, a0, a1, a2, a3);
  const X* u0 = x0 + sl.c;
  for (int64_t i = 0; i < sl.len; i += 8) {
    const __m256 u = load8(u0 + i);
    a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_load_ps(v0 + i), u));
    a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_load_ps(v1 + i), u));
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_load_ps(v2 + i), u));
    a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_load_ps(v3 + i), u));
  }
  endSlice(sl, x0, a0, a1, a2, a3, carry, y0);
}

// One block of four bf16 W rows (w0 the first) against every X row, widened a slice at a time;
// the block ahead requested over the first slice's pairs.
template <class X>
CROSSLAB_AVX2_TARGET void widenedBlock(const uint16_t* w0, const X* xs, int64_t n, int64_t k, float* y, int64_t ldy,
                                       BlockAhead& ahead, int64_t blockLines) {
  const int64_t k8 = k / 8 * 8, slices = (k8 + kWidenSlice - 1) / kWidenSlice;
  const int64_t slice = (k8 / 8 + slices - 1) / slices * 8, ld = slice + kWidenPad, pairs = n / 2;
  alignas(32) float wide[4 * (kWidenSlice + kWidenPad)];
  thread_local std::vector<float> carried;  // 32 floats (four vectors) per X row; read past one slice
  if (carried.size() < size_t(32 * n)) carried.resize(size_t(32 * n));
  for (int64_t c = 0; c < k8; c += slice) {
    const int64_t len = std::min(slice, k8 - c);
    for (int q = 0; q < 4; ++q)
      for (int64_t i = 0; i < len; i += 8) _mm256_store_ps(wide + q * ld + i, load8(w0 + q * k + c + i));
    const SliceSums sl{wide, ld, c, len, c == 0, c + len == k8, w0, k, k8};
    int64_t b = 0;
    for (; b + 2 <= n; b += 2) {
      if (c == 0) ahead.to(blockLines * (b / 2 + 1) / pairs);
      widenedFourByTwo(sl, xs + b * k, xs + (b + 1) * k, carried.data() + 32 * b, y + b * ldy, y + (b + 1) * ldy);
    }
    if (b < n) widenedFourByOne(sl, xs + b * k, carried.data() + 32 * b, y + b * ldy);
  }
}

// W [rows, k] against X [n, k]: T and X each fp32 or bf16 bits (widened as loaded).
template <class T, class X>
CROSSLAB_AVX2_TARGET void avx2RowsOf(const T* w, int64_t rows, const X* xs, int64_t n, int64_t k, float* y,
                                     int64_t ldy) {
  const int64_t k8 = k / 8 * 8;
  const bool readAhead =
      rows * k * int64_t(sizeof(T)) >= kAvx2AheadMinBytes && (std::is_same_v<T, uint16_t> || n > 1);
  const int64_t blockLines = aheadLinesOf<T>(4 * k), pairs = n / 2;
  constexpr int64_t kLinesPerStep = 4 * 8 * int64_t(sizeof(T)) / 64;  // W bytes one step of k reads
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const T *w0 = w + r * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
    const bool inW = r + 4 * (kAvx2AheadBlocks + 1) <= rows;  // the block ahead lies within W
    BlockAhead ahead(aheadOf(w, (r + 4 * kAvx2AheadBlocks) * k), readAhead && inW ? blockLines : 0);
    if constexpr (std::is_same_v<T, uint16_t>)
      if (n >= kWidenFrom && k8 > 0) {
        widenedBlock(w0, xs, n, k, y + r, ldy, ahead, blockLines);
        continue;
      }
    int64_t b = 0;
    for (; b + 2 <= n; b += 2) {
      ahead.to(blockLines * (b / 2 + 1) / pairs);
      fourByTwo(w0, k, xs + b * k, y + b * ldy + r, y + (b + 1) * ldy + r);
    }
    for (; b < n; ++b) {
      const X* xb = xs + b * k;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
      int64_t line = ahead.next();
      for (int64_t i = 0; i < k8; i += 8) {
        line += kLinesPerStep;
        ahead.to(line);
        const __m256 xv = load8(xb + i);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(load8(w0 + i), xv));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(load8(w1 + i), xv));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(load8(w2 + i), xv));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(load8(w3 + i), xv));
      }
      ahead.to(blockLines);
      finishFour(a0, a1, a2, a3, w0, xb, k8, k, y + b * ldy + r);
    }
  }
  for (; r < rows; ++r) {
    const T* w0 = w + r * k;
    for (int64_t b = 0; b < n; ++b) {
      const X* xb = xs + b * k;
      __m256 a0 = _mm256_setzero_ps();
      for (int64_t i = 0; i < k8; i += 8) a0 = _mm256_add_ps(a0, _mm256_mul_ps(load8(w0 + i), load8(xb + i)));
      y[b * ldy + r] = finishSum(a0, w0, xb, k8, k);
    }
  }
}

// bf16 X given as fp32 (MatmulRows::widened) is read as it is: the widening of X's values at
// every use is gone (a ninth of the four-by-two loop's vector work); the products are the same.
template <class T>
CROSSLAB_AVX2_TARGET void avx2Rows(const T* w, int64_t rows, const MatmulRows<T>& x, float* y, int64_t ldy) {
  if (x.widened)
    avx2RowsOf(w, rows, x.widened, x.n, x.k, y, ldy);
  else
    avx2RowsOf(w, rows, x.x, x.n, x.k, y, ldy);
}

}  // namespace

namespace detail {
bool avx2RowsAvailable() { return avx2Available(); }
int64_t matmulAheadLinesIssued() { return tAvx2AheadLines; }
void matmulRowsAvx2(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  avx2Rows(w, rows, x, y, ldy);
}
void matmulRowsAvx2(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy) {
  avx2Rows(w, rows, x, y, ldy);
}
void matmulRowsPortable(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy) {
  portable(w, rows, x, y, ldy);
}
void matmulRowsPortable(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy) {
  portable(w, rows, x, y, ldy);
}
}  // namespace detail

}  // namespace crosslab::model
