// The decode kernels of core/model/cpu_matmul.h against double-precision sums: every kernel
// (n = 1, tiles for 2..15 rows, packed 16..64 and a second chunk), row and k tails (odd k
// too), fp32 and bf16; the attention rows and the softmax exponential.
// First: the kernels' header silences GCC 12's false -Wuninitialized inside immintrin.h, which
// only works where it is the one that includes immintrin.h (Qt's headers may include it too).
#include "core/model/cpu_simd.h"

#include <QtTest>

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "core/infer/sampler.h"
#include "core/model/cpu_attention.h"
#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_matmul.h"

using namespace crosslab::model;
using crosslab::model::detail::KernelCap;

namespace {

uint16_t toBf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <class T>
double worstRelative(int64_t rows, int64_t k, int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
  std::vector<double> wd(w.size()), xd(x.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) wd[i] = w[i] = normal(rng);
    else wd[i] = fromBf16(w[i] = toBf16(normal(rng)));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) xd[i] = x[i] = normal(rng);
    else xd[i] = fromBf16(x[i] = toBf16(normal(rng)));
  }
  const int64_t ldy = rows + 3;  // Y's rows longer than W's row count: the stride is honoured
  constexpr int64_t kGuard = 16;  // rows past the last X row: a store for a padding lane lands there
  std::vector<float> y(size_t((n + kGuard) * ldy), NAN);
  // Packed into a reused buffer that holds NaNs from "an earlier product" (larger than needed):
  // every lane the kernels read must be written, padding included.
  std::vector<T> buffer(size_t((n + 64) * (k + 1)));
  if constexpr (std::is_same_v<T, float>) std::fill(buffer.begin(), buffer.end(), NAN);
  else std::fill(buffer.begin(), buffer.end(), uint16_t(0x7FC0));
  const MatmulRows<T> xr(x.data(), n, k, buffer);
  const int64_t split = rows / 3;  // two calls, as two threads would split W's rows
  matmulRows(w.data(), split, xr, y.data(), ldy);
  matmulRows(w.data() + split * k, rows - split, xr, y.data() + split, ldy);
  {  // a fresh buffer of its own gives the same bits
    std::vector<float> y2(y.size(), NAN);
    const MatmulRows<T> own(x.data(), n, k);
    matmulRows(w.data(), split, own, y2.data(), ldy);
    matmulRows(w.data() + split * k, rows - split, own, y2.data() + split, ldy);
    for (size_t i = 0; i < y.size(); ++i)
      if (std::memcmp(&y[i], &y2[i], sizeof(float)) != 0) return INFINITY;
    // and so does one call over all the rows: a row's bits do not depend on where the thread
    // pool cuts W (the rows left over after groups of four are summed as in a group)
    std::fill(y2.begin(), y2.end(), NAN);
    matmulRows(w.data(), rows, own, y2.data(), ldy);
    for (size_t i = 0; i < y.size(); ++i)
      if (std::memcmp(&y[i], &y2[i], sizeof(float)) != 0) return INFINITY;
  }
  double worst = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0, scale = 0;
      for (int64_t i = 0; i < k; ++i) {
        exact += wd[size_t(r * k + i)] * xd[size_t(b * k + i)];
        scale += std::fabs(wd[size_t(r * k + i)] * xd[size_t(b * k + i)]);
      }
      const double got = y[size_t(b * ldy + r)];
      worst = std::max(worst, std::isfinite(got) ? std::fabs(got - exact) / std::max(scale, 1e-30) : INFINITY);
    }
  for (int64_t b = 0; b < n; ++b)  // nothing written past the rows
    for (int64_t r = rows; r < ldy; ++r)
      if (!std::isnan(y[size_t(b * ldy + r)])) return INFINITY;
  for (int64_t i = n * ldy; i < int64_t(y.size()); ++i)  // nor past the last X row
    if (!std::isnan(y[size_t(i)])) return INFINITY;
  return worst;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// sum16x16 and sum16x4 of the same vectors (16 of them), lane by lane; AVX-512F callers only.
CROSSLAB_F32_TARGET void horizontalSums(const float (&v)[16][16], float (&wide)[16], float (&four)[16]) {
  __m512 x[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm512_loadu_ps(v[i]);
  _mm512_storeu_ps(wide, simd::sum16x16(x));
  for (int i = 0; i < 16; i += 4) _mm_storeu_ps(four + i, simd::sum16x4(x[i], x[i + 1], x[i + 2], x[i + 3]));
}

}  // namespace

class TestCpuMatmul : public QObject {
  Q_OBJECT

 private slots:
  // A thread's share of a product is worth waking a thread for: >= 256K weights streamed or
  // >= 1M multiply-adds, and no more rows than that needs (16 at least).
  void matmulGrainSplitsOnlyWorthwhileProducts() {
    const auto worth = [](int64_t rows, int64_t k, int64_t n) { return rows * k >= (1 << 18) || rows * k * n >= (1 << 20); };
    for (int64_t k : {5, 64, 128, 768, 2048, 8192})
      for (int64_t n : {1, 2, 8, 16, 32, 64}) {
        const int64_t g = matmulGrain(k, n);
        QVERIFY2(g >= 16, qPrintable(QString("k=%1 n=%2: %3").arg(k).arg(n).arg(g)));
        QVERIFY2(worth(g, k, n) || g == 16, qPrintable(QString("k=%1 n=%2: %3").arg(k).arg(n).arg(g)));
        QVERIFY2(g == 16 || !worth(g - 1, k, n), qPrintable(QString("k=%1 n=%2: %3").arg(k).arg(n).arg(g)));
      }
    // the demo model's LM head (964 x 128): one row on the calling thread, 32 rows split
    QVERIFY(matmulGrain(128, 1) >= 964);
    QVERIFY(matmulGrain(128, 32) <= 964 / 2);
    // a 1B model's 2048 x 2048 projection at one row: split, for the second core's bandwidth
    QVERIFY(matmulGrain(2048, 1) <= 2048 / 2);
  }

  void matmulRowsMatchesExactSums_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("n");
    for (int n : {1, 2, 3, 4, 5, 8, 15, 16, 17, 33, 48, 64, 70, 130})
      for (auto [rows, k] : {std::pair{37, 128}, std::pair{16, 224}, std::pair{9, 5}, std::pair{21, 777}})
        QTest::addRow("%dx%d n=%d", rows, k, n) << rows << k << n;
    // a wide Y (an LM head's): the packed kernels stage blocks of 64 W rows (not a multiple here)
    for (int n : {16, 17, 33, 70, 130}) QTest::addRow("4133x33 n=%d", n) << 4133 << 33 << n;
  }

  // Relative to Σ|w x|: fp32 sums in a different order than the double reference.
  void matmulRowsMatchesExactSums() {
    QFETCH(int, rows);
    QFETCH(int, k);
    QFETCH(int, n);
    const double f32 = worstRelative<float>(rows, k, n, unsigned(rows * 7 + k + n));
    const double bf16 = worstRelative<uint16_t>(rows, k, n, unsigned(rows * 5 + k + n));
    QVERIFY2(f32 < 1e-6, qPrintable(QString::number(f32)));
    QVERIFY2(bf16 < 1e-6, qPrintable(QString::number(bf16)));  // bf16 inputs, fp32 accumulation
  }

  // roundOut stores what roundBf16 makes of the plain product afterwards, bit for bit, on every
  // path (one row, tiles, packed with a narrow and a staged wide Y (W rows past a 64-row block),
  // a W split in two calls), and writes nothing outside Y's rows and columns.
  void roundedOnStoreIsRoundedAfterwards() {
    const auto check = [](auto tag, int64_t rows, int64_t k, int64_t n, int64_t ldy) {
      using T = decltype(tag);
      std::mt19937 rng(unsigned(rows + k * 3 + n * 7));
      std::normal_distribution<float> normal;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      x[0] = std::is_same_v<T, float> ? T(NAN) : T(0x7FC0);  // a NaN input: row 0 all NaN, kept NaN
      const MatmulRows<T> xr(x.data(), n, k);
      std::vector<float> plain(size_t((n + 1) * ldy), -7.f), rounded(plain.size(), -7.f);
      matmulRows(w.data(), rows, xr, plain.data(), ldy);
      for (int64_t b = 0; b < n; ++b) roundBf16(plain.data() + b * ldy, rows);
      const int64_t split = rows / 3;
      matmulRows(w.data(), split, xr, rounded.data(), ldy, true);
      matmulRows(w.data() + split * k, rows - split, xr, rounded.data() + split, ldy, true);
      for (size_t i = 0; i < plain.size(); ++i)
        if (std::memcmp(&plain[i], &rounded[i], sizeof(float)) != 0)
          return QString("%1 rows=%2 k=%3 n=%4 ldy=%5: value %6: %7 vs %8")
              .arg(std::is_same_v<T, float> ? "f32" : "bf16").arg(rows).arg(k).arg(n).arg(ldy).arg(i)
              .arg(double(rounded[i])).arg(double(plain[i]));
      return QString();
    };
    int checked = 0;
    for (int64_t n : {1, 3, 8, 15, 16, 17, 33, 64, 70})
      for (auto [rows, k] : {std::pair<int64_t, int64_t>{37, 128}, {9, 5}, {300, 64}, {600, 33}})
        for (int64_t ldy : {rows, rows + 3, int64_t(4133)}) {
          for (const QString& bad : {check(float{}, rows, k, n, ldy), check(uint16_t{}, rows, k, n, ldy)})
            QVERIFY2(bad.isEmpty(), qPrintable(bad));
          checked += 2;
        }
    QCOMPARE(checked, 9 * 4 * 3 * 2);
  }

  // The LoRA expand through bᵀ: every output of every row equals the exact sum, for ranks and
  // widths that are not multiples of the vector (tails) and wider than one 64-column block;
  // each row of several computes what it does alone.
  void transposedSmallKMatchesExactSums() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    for (int64_t k : {1, 8, 16, 33})
      for (int64_t out : {5, 16, 64, 100, 384})
        for (int64_t n : {1, 3, 9}) {
          std::vector<float> wt(static_cast<size_t>(k * out)), x(static_cast<size_t>(n * k)),
              y(static_cast<size_t>(n * (out + 3)), 7.0f);
          std::vector<uint16_t> wb(wt.size());
          for (size_t i = 0; i < wt.size(); ++i) wt[i] = fromBf16(wb[i] = toBf16(normal(rng)));
          for (auto& v : x) v = normal(rng);
          for (int pass = 0; pass < 2; ++pass) {
            const int64_t ldy = out + 3;  // a gap after each row: never written
            std::fill(y.begin(), y.end(), 7.0f);
            pass ? matmulTransposed(wb.data(), k, out, x.data(), n, y.data(), ldy)
                 : matmulTransposed(wt.data(), k, out, x.data(), n, y.data(), ldy);
            for (int64_t b = 0; b < n; ++b) {
              for (int64_t j = 0; j < out; ++j) {
                double exact = 0;
                for (int64_t i = 0; i < k; ++i) exact += double(x[size_t(b * k + i)]) * wt[size_t(i * out + j)];
                QVERIFY2(std::fabs(y[size_t(b * ldy + j)] - exact) < 1e-4,
                         qPrintable(QString("k %1 out %2 row %3 col %4").arg(k).arg(out).arg(b).arg(j)));
              }
              for (int64_t j = out; j < ldy; ++j) QCOMPARE(y[size_t(b * ldy + j)], 7.0f);
              // the same sums, bit for bit, as that row alone
              std::vector<float> alone(static_cast<size_t>(out));
              pass ? matmulTransposed(wb.data(), k, out, x.data() + b * k, 1, alone.data(), out)
                   : matmulTransposed(wt.data(), k, out, x.data() + b * k, 1, alone.data(), out);
              QVERIFY(std::memcmp(alone.data(), y.data() + b * ldy, sizeof(float) * size_t(out)) == 0);
            }
          }
        }
  }

  // A bf16 model's LoRA expand on pairs of the rank: bit for bit the sums of the fp32 expand
  // through Bᵀ widened (the kernel it replaces for bf16 models), for odd and even ranks (a
  // zero-padded last pair), ranks past the kernel's 256 at a time, widths with tails and several 64-output blocks, several rows (the
  // gap after each row untouched); the packed layout holds every B value once, zeros elsewhere.
  void bf16ExpandOnPairsMatchesTheFp32Expand() {
    std::mt19937 rng(12);
    std::normal_distribution<float> normal;
    int checked = 0;
    if (!bf16KernelsAvailable()) qInfo("no AVX512-BF16 here: the expand without it (AVX2 or portable) is what is compared");
    for (int64_t k : {1, 2, 7, 16, 17, 64, 255, 257, 300, 513})  // past 256: the kernel's rank in parts
      for (int64_t out : {1, 15, 16, 63, 64, 65, 130, 384})
        for (int64_t n : {1, 2, 5}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<uint16_t> b(sz(out * k));  // [out, k], as PEFT's lora_B
          std::vector<float> bt(sz(k * out)), x(sz(n * k));
          for (int64_t j = 0; j < out; ++j)
            for (int64_t i = 0; i < k; ++i) bt[sz(i * out + j)] = fromBf16(b[sz(j * k + i)] = toBf16(normal(rng)));
          for (auto& v : x) v = fromBf16(toBf16(normal(rng)));  // the shrink's rounded values
          std::vector<uint16_t> packed(sz(expandBf16PackedSize(k, out)), 0xffff);
          packExpandBf16(b.data(), out, k, packed.data());
          std::vector<uint16_t> sortedB = b, nonZero;
          for (uint16_t v : packed)
            if (v != 0) nonZero.push_back(v);
          sortedB.erase(std::remove(sortedB.begin(), sortedB.end(), uint16_t(0)), sortedB.end());
          std::sort(sortedB.begin(), sortedB.end());
          std::sort(nonZero.begin(), nonZero.end());
          QVERIFY(nonZero == sortedB);
          const int64_t ldy = out + 3;
          std::vector<float> want(sz(n * ldy), 7.0f), got(sz(n * ldy), 7.0f);
          matmulTransposed(bt.data(), k, out, x.data(), n, want.data(), ldy);
          expandBf16(packed.data(), k, out, x.data(), n, got.data(), ldy);
          QVERIFY2(std::memcmp(want.data(), got.data(), sizeof(float) * want.size()) == 0,
                   qPrintable(QString("k %1 out %2 n %3").arg(k).arg(out).arg(n)));
          for (int64_t r = 0; r < n; ++r)
            for (int64_t j = out; j < ldy; ++j) QCOMPARE(got[sz(r * ldy + j)], 7.0f);
          ++checked;
        }
    QCOMPARE(checked, 10 * 8 * 3);
  }

  // The fused decode step's runtime LoRA adds each expand's sums to the projection's output as
  // it stores them, reading its rank's columns out of a shrink shared with other projections
  // (rows ldx apart): the same bits as the expand stored on its own (Set, x compact) and then
  // added as the step added it before (addRound: r(y + r(s)) for bf16, y + s for fp32), on every
  // kernel (bf16 pairs, fp32 Bᵀ, bf16 Bᵀ) and without the kernels' help the same.
  void expandsAddIntoTheirRowsAsAddRoundDoes() {
    std::mt19937 rng(21);
    std::normal_distribution<float> normal;
    const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
    int checked = 0;
    for (int64_t k : {1, 7, 16, 33})
      for (int64_t out : {1, 15, 64, 130})
        for (int64_t n : {1, 3})
          for (int64_t extra : {int64_t(0), int64_t(5)}) {  // the shrink's other columns: before and after ours
            const int64_t ldx = k + 2 * extra, ldy = out + 2;
            std::vector<float> x(sz(n * ldx)), compact(sz(n * k));
            for (auto& v : x) v = fromBf16(toBf16(normal(rng)));
            for (int64_t b = 0; b < n; ++b)
              std::copy(x.begin() + b * ldx + extra, x.begin() + b * ldx + extra + k, compact.begin() + b * k);
            std::vector<uint16_t> b(sz(out * k)), btb(sz(k * out));
            std::vector<float> bt(sz(k * out));
            for (int64_t j = 0; j < out; ++j)
              for (int64_t i = 0; i < k; ++i)
                bt[sz(i * out + j)] = fromBf16(btb[sz(i * out + j)] = b[sz(j * k + i)] = toBf16(0.05f * normal(rng)));
            std::vector<uint16_t> packed(sz(expandBf16PackedSize(k, out)));
            packExpandBf16(b.data(), out, k, packed.data());
            std::vector<float> y0(sz(n * ldy));
            for (auto& v : y0) v = fromBf16(toBf16(normal(rng)));  // the base product's rounded output
            for (int kernel = 0; kernel < 3; ++kernel)
              for (ExpandStore store : {ExpandStore::Add, ExpandStore::AddRounded}) {
                const bool rounded = store == ExpandStore::AddRounded;
                const auto run = [&](const float* xs, int64_t lx, float* y, ExpandStore st) {
                  if (kernel == 0) expandBf16(packed.data(), k, out, xs, n, y, ldy, st, lx);
                  else if (kernel == 1) matmulTransposed(bt.data(), k, out, xs, n, y, ldy, st, lx);
                  else matmulTransposed(btb.data(), k, out, xs, n, y, ldy, st, lx);
                };
                std::vector<float> sums(sz(n * ldy), 3.0f), want = y0, got = y0;
                run(compact.data(), 0, sums.data(), ExpandStore::Set);
                for (int64_t r = 0; r < n; ++r) addRound(want.data() + r * ldy, sums.data() + r * ldy, out, true, rounded);
                run(x.data() + extra, ldx, got.data(), store);
                const QString where = QString("kernel %1 %2 k %3 out %4 n %5 ldx %6")
                                          .arg(kernel).arg(rounded ? "rounded" : "plain").arg(k).arg(out).arg(n).arg(ldx);
                QVERIFY2(std::memcmp(want.data(), got.data(), sizeof(float) * want.size()) == 0, qPrintable(where));
                QVERIFY2(got != y0, qPrintable(where));  // something was added
                ++checked;
              }
          }
    QCOMPARE(checked, 4 * 4 * 2 * 2 * 3 * 2);
  }

  // The LoRA shrinks of projections that read one input run as one product over their A
  // stacked: each W row's sum is the same whether its matrix is multiplied alone or stacked with
  // others, on every kernel (one row, tiles, packed), fp32 and bf16.
  void stackedProductsEqualTheirParts() {
    const auto check = [](auto tag, int64_t n, const std::vector<int64_t>& parts, int64_t k) {
      using T = decltype(tag);
      std::mt19937 rng(unsigned(n * 31 + k));
      std::normal_distribution<float> normal;
      int64_t rows = 0;
      for (int64_t p : parts) rows += p;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      const MatmulRows<T> xr(x.data(), n, k);
      std::vector<float> whole(size_t(n * rows)), alone(whole.size());
      matmulRows(w.data(), rows, xr, whole.data(), rows);
      int64_t at = 0;
      for (int64_t p : parts) {
        std::vector<float> y(size_t(n * p));
        matmulRows(w.data() + at * k, p, xr, y.data(), p);
        for (int64_t b = 0; b < n; ++b) std::copy(y.begin() + b * p, y.begin() + (b + 1) * p, alone.begin() + b * rows + at);
        at += p;
      }
      return std::memcmp(whole.data(), alone.data(), sizeof(float) * whole.size()) == 0;
    };
    int checked = 0;
    for (int64_t n : {1, 2, 5, 16, 17, 40})
      for (const auto& parts : {std::vector<int64_t>{16, 16, 16}, {16, 8}, {7, 13, 5}, {1, 64}})
        for (int64_t k : {128, 33, 384}) {
          QVERIFY2(check(float{}, n, parts, k), qPrintable(QString("f32 n %1 k %2").arg(n).arg(k)));
          QVERIFY2(check(uint16_t{}, n, parts, k), qPrintable(QString("bf16 n %1 k %2").arg(n).arg(k)));
          checked += 2;
        }
    QCOMPARE(checked, 6 * 4 * 3 * 2);
  }

  // Without AVX-512, the AVX2 loop gives the portable loop's sums bit for bit: rows in and out
  // of its blocks of four, k with and without a tail of fewer than eight, one and many X rows.
  void avx2RowsArePortableBitForBit() {
    if (!detail::avx2RowsAvailable()) QSKIP("no AVX2");
    const auto check = [](auto tag, int64_t rows, int64_t k, int64_t n) {
      using T = decltype(tag);
      std::mt19937 rng(unsigned(rows * 7 + k * 13 + n));
      std::normal_distribution<float> normal;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      const MatmulRows<T> xr(x.data(), n, k);
      const int64_t ldy = rows + 3;
      std::vector<float> fast(size_t(n * ldy), -1.0f), slow(fast.size(), -1.0f);
      detail::matmulRowsAvx2(w.data(), rows, xr, fast.data(), ldy);
      detail::matmulRowsPortable(w.data(), rows, xr, slow.data(), ldy);
      return std::memcmp(fast.data(), slow.data(), sizeof(float) * fast.size()) == 0;
    };
    int checked = 0;
    for (int64_t rows : {1, 3, 4, 9, 64})
      for (int64_t k : {1, 7, 8, 33, 128, 389})
        for (int64_t n : {1, 2, 5, 12}) {
          const QString what = QString("rows %1 k %2 n %3").arg(rows).arg(k).arg(n);
          QVERIFY2(check(float{}, rows, k, n), qPrintable("f32 " + what));
          QVERIFY2(check(uint16_t{}, rows, k, n), qPrintable("bf16 " + what));
          checked += 2;
        }
    QCOMPARE(checked, 5 * 6 * 4 * 2);
  }

  // Without AVX512-BF16, the LoRA expands are the sequential sums bit for bit (each output over
  // i in order, a multiply then an add): the AVX2 loops' eight outputs at a time, their tails
  // and the packed layout's blocks change nothing.
  // Checked on every CPU: with the AVX-512 kernels held back, the AVX2 loops (where the CPU has
  // AVX2), and the portable loop.
  void expandsWithoutKernelsAreTheSequentialSums() {
    onEachPath({KernelCap::NoAvx512, KernelCap::Portable}, [this] { expandsAreSequentialSums(); });
  }
  void attentionRowsWithoutKernelsAreTheSequentialSums() {
    onEachPath({KernelCap::NoAvx512, KernelCap::Portable}, [this] { attentionRowsAreSequentialSums(); });
  }

 private:
  void expandsAreSequentialSums() {
    std::mt19937 rng(31);
    std::normal_distribution<float> normal;
    int checked = 0;
    for (int64_t k : {1, 2, 7, 16, 17, 33})
      for (int64_t out : {1, 7, 8, 9, 64, 65, 130})
        for (int64_t n : {1, 3}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<uint16_t> b(sz(out * k)), wb(sz(k * out));
          std::vector<float> wt(sz(k * out)), x(sz(n * k));
          for (int64_t j = 0; j < out; ++j)
            for (int64_t i = 0; i < k; ++i) wt[sz(i * out + j)] = fromBf16(wb[sz(i * out + j)] = b[sz(j * k + i)] = toBf16(normal(rng)));
          for (auto& v : x) v = fromBf16(toBf16(normal(rng)));
          std::vector<float> want(sz(n * out));
          for (int64_t r = 0; r < n; ++r)
            for (int64_t j = 0; j < out; ++j) {
              float acc = 0;
              for (int64_t i = 0; i < k; ++i) acc += x[sz(r * k + i)] * wt[sz(i * out + j)];
              want[sz(r * out + j)] = acc;
            }
          std::vector<uint16_t> packed(sz(expandBf16PackedSize(k, out)));
          packExpandBf16(b.data(), out, k, packed.data());
          std::vector<float> f32(want.size(), -1.0f), bf16t(want.size(), -1.0f), pairs(want.size(), -1.0f);
          matmulTransposed(wt.data(), k, out, x.data(), n, f32.data(), out);
          matmulTransposed(wb.data(), k, out, x.data(), n, bf16t.data(), out);
          expandBf16(packed.data(), k, out, x.data(), n, pairs.data(), out);
          const QString what = QString("k %1 out %2 n %3").arg(k).arg(out).arg(n);
          QVERIFY2(std::memcmp(f32.data(), want.data(), sizeof(float) * want.size()) == 0, qPrintable("fp32 Bt " + what));
          QVERIFY2(std::memcmp(bf16t.data(), want.data(), sizeof(float) * want.size()) == 0, qPrintable("bf16 Bt " + what));
          QVERIFY2(std::memcmp(pairs.data(), want.data(), sizeof(float) * want.size()) == 0, qPrintable("packed " + what));
          checked += 3;
        }
    QCOMPARE(checked, 6 * 7 * 2 * 3);
  }

  // Without the AVX-512 kernels, the attention rows are the sequential sums bit for bit (each
  // score over d in order, each output over t in order, a multiply then an add): the AVX2
  // loops' blocks of eight positions and of 8 / 32 outputs, and their tails, change nothing.
  void attentionRowsAreSequentialSums() {
    std::mt19937 rng(29);
    std::normal_distribution<float> normal;
    int checked = 0;
    for (int64_t hd : {5, 8, 13, 32, 40, 64})
      for (int64_t len : {1, 7, 8, 9, 16, 24, 40, 57, 70})  // blocks of eight rows: 0, 1, 2, 3, 4+1, 4+3, 4+4
        for (int64_t heads : {1, 3}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          const int64_t ss = len + 3;
          std::vector<float> q(sz(heads * hd)), k(sz(len * hd)), p(sz(heads * ss)), base(sz(heads * hd));
          std::vector<uint16_t> kb(k.size());
          for (auto& v : q) v = normal(rng);
          for (size_t i = 0; i < k.size(); ++i) k[i] = fromBf16(kb[i] = toBf16(normal(rng)));
          for (auto& v : p) v = normal(rng);
          for (auto& v : base) v = normal(rng);
          std::vector<float> s(sz(heads * ss), -1.0f), sb(s.size(), -1.0f), want(s.size(), -1.0f);
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < len; ++t) {
              float acc = 0;
              for (int64_t d = 0; d < hd; ++d) acc += q[sz(h * hd + d)] * k[sz(t * hd + d)];
              want[sz(h * ss + t)] = acc;
            }
          dotRows(q.data(), heads, k.data(), len, hd, s.data(), ss);
          dotRows(q.data(), heads, kb.data(), len, hd, sb.data(), ss);
          const QString what = QString("hd %1 len %2 heads %3").arg(hd).arg(len).arg(heads);
          QVERIFY2(std::memcmp(s.data(), want.data(), sizeof(float) * s.size()) == 0, qPrintable("scores f32 " + what));
          QVERIFY2(std::memcmp(sb.data(), want.data(), sizeof(float) * s.size()) == 0, qPrintable("scores bf16 " + what));
          std::vector<float> out = base, outb = base, wantOut = base;
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < len; ++t)
              for (int64_t d = 0; d < hd; ++d) wantOut[sz(h * hd + d)] += p[sz(h * ss + t)] * k[sz(t * hd + d)];
          weightedRows(p.data(), heads, ss, k.data(), len, hd, out.data());
          weightedRows(p.data(), heads, ss, kb.data(), len, hd, outb.data());
          QVERIFY2(std::memcmp(out.data(), wantOut.data(), sizeof(float) * out.size()) == 0, qPrintable("values f32 " + what));
          QVERIFY2(std::memcmp(outb.data(), wantOut.data(), sizeof(float) * out.size()) == 0, qPrintable("values bf16 " + what));
          checked += 4;
        }
    QCOMPARE(checked, 6 * 9 * 2 * 4);
  }

 private slots:

  // Grouped-query attention rows: every head near the exact sums, and each head of a group
  // bit-identical to the same head computed alone (heads = 1), f32 and bf16 cached rows.
  void attentionRows() {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (int64_t hd : {32, 40, 64, 128})
      for (int64_t len : {1, 3, 4, 9, 70})
        for (int64_t heads : {1, 2, 3, 4, 7, 8}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<float> q(sz(heads * hd)), k(sz(len * hd)), p(sz(heads * len)), s(sz(heads * len)),
              out(sz(heads * hd)), alone(sz(hd));
          std::vector<uint16_t> kb(k.size());
          for (auto& v : q) v = normal(rng);
          for (size_t i = 0; i < k.size(); ++i) k[i] = fromBf16(kb[i] = toBf16(normal(rng)));
          for (auto& v : p) v = std::fabs(normal(rng));
          const QString where = QString("hd %1 len %2 heads %3").arg(hd).arg(len).arg(heads);
          for (int pass = 0; pass < 2; ++pass) {
            const auto dot = [&](const float* qh, int64_t nh, float* sh) {
              pass ? dotRows(qh, nh, kb.data(), len, hd, sh, len) : dotRows(qh, nh, k.data(), len, hd, sh, len);
            };
            const auto weighted = [&](const float* ph, int64_t nh, float* oh) {
              pass ? weightedRows(ph, nh, len, kb.data(), len, hd, oh) : weightedRows(ph, nh, len, k.data(), len, hd, oh);
            };
            dot(q.data(), heads, s.data());
            std::fill(out.begin(), out.end(), 1.0f);
            weighted(p.data(), heads, out.data());
            for (int64_t h = 0; h < heads; ++h) {
              for (int64_t t = 0; t < len; ++t) {
                double exact = 0;
                for (int64_t d = 0; d < hd; ++d) exact += double(q[sz(h * hd + d)]) * k[sz(t * hd + d)];
                QVERIFY2(std::fabs(s[sz(h * len + t)] - exact) < 1e-4, qPrintable(where));
              }
              for (int64_t d = 0; d < hd; ++d) {
                double exact = 1.0;
                for (int64_t t = 0; t < len; ++t) exact += double(p[sz(h * len + t)]) * k[sz(t * hd + d)];
                QVERIFY2(std::fabs(out[sz(h * hd + d)] - exact) < 1e-4, qPrintable(where));
              }
              std::vector<float> sAlone(sz(len));
              dot(q.data() + h * hd, 1, sAlone.data());
              QVERIFY2(std::memcmp(sAlone.data(), s.data() + h * len, sz(len) * sizeof(float)) == 0, qPrintable(where));
              std::fill(alone.begin(), alone.end(), 1.0f);
              weighted(p.data() + h * len, 1, alone.data());
              QVERIFY2(std::memcmp(alone.data(), out.data() + h * hd, sz(hd) * sizeof(float)) == 0, qPrintable(where));
            }
          }
        }
  }

  // Attention rows with bf16 queries and probabilities (the bf16 model's q after RoPE's
  // rounding, p after the softmax's) over bf16 keys and values: near the exact sums of the same
  // bf16 values, for every head size's tail (hd not a multiple of 32, odd lengths), and each
  // head of a group bit-identical to the same head computed alone.
  void attentionRowsBf16QueriesAndWeights() {
    qInfo("bf16 pairs through %s", bf16KernelsAvailable() ? "AVX512-BF16's VDPBF16PS" : "the loops without AVX512-BF16");
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    for (int64_t hd : {32, 40, 64, 128})
      for (int64_t len : {1, 3, 4, 9, 70})
        for (int64_t heads : {1, 2, 3, 4, 7, 8}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<uint16_t> qb(sz(heads * hd)), kb(sz(len * hd)), pb(sz(heads * len));
          std::vector<float> q(qb.size()), p(pb.size()), s(sz(heads * len)), out(sz(heads * hd), 1.0f);
          for (size_t i = 0; i < qb.size(); ++i) q[i] = fromBf16(qb[i] = toBf16(normal(rng)));
          for (size_t i = 0; i < pb.size(); ++i) p[i] = fromBf16(pb[i] = toBf16(std::fabs(normal(rng))));
          for (auto& v : kb) v = toBf16(normal(rng));
          const QString where = QString("hd %1 len %2 heads %3").arg(hd).arg(len).arg(heads);
          dotRows(qb.data(), heads, kb.data(), len, hd, s.data(), len);
          weightedRows(pb.data(), heads, len, kb.data(), len, hd, out.data());
          for (int64_t h = 0; h < heads; ++h) {
            for (int64_t t = 0; t < len; ++t) {
              double exact = 0;
              for (int64_t d = 0; d < hd; ++d) exact += double(q[sz(h * hd + d)]) * fromBf16(kb[sz(t * hd + d)]);
              QVERIFY2(std::fabs(s[sz(h * len + t)] - exact) < 1e-4, qPrintable(where));
            }
            for (int64_t d = 0; d < hd; ++d) {
              double exact = 1.0;
              for (int64_t t = 0; t < len; ++t) exact += double(p[sz(h * len + t)]) * fromBf16(kb[sz(t * hd + d)]);
              QVERIFY2(std::fabs(out[sz(h * hd + d)] - exact) < 1e-4, qPrintable(where));
            }
            std::vector<float> sAlone(sz(len)), oAlone(sz(hd), 1.0f);
            dotRows(qb.data() + h * hd, 1, kb.data(), len, hd, sAlone.data(), len);
            QVERIFY2(std::memcmp(sAlone.data(), s.data() + h * len, sz(len) * sizeof(float)) == 0, qPrintable(where));
            weightedRows(pb.data() + h * len, 1, len, kb.data(), len, hd, oAlone.data());
            QVERIFY2(std::memcmp(oAlone.data(), out.data() + h * hd, sz(hd) * sizeof(float)) == 0, qPrintable(where));
          }
        }
  }

  // Reading ahead (cpu_attention.h: the vector kernels prefetching the range their caller reads
  // next) issues each line of the range once, as many of its bytes as the kernel has read of its
  // own rows (a pass over the rows per group of heads), and changes no bit of any result: for
  // ranges shorter and longer than that, unaligned, and empty.
  void readAheadIssuesItsLinesAndKeepsTheBits() {
    if (!bf16KernelsAvailable()) QSKIP("no AVX512-BF16: the portable loops do not read ahead");
    std::mt19937 rng(17);
    std::normal_distribution<float> normal;
    std::vector<char> other(40000);
    const uintptr_t base = (reinterpret_cast<uintptr_t>(other.data()) + 63) & ~uintptr_t(63);
    const auto lines = [](uintptr_t from, int64_t n) {  // the cache lines [from, from + n) touches
      return n <= 0 ? 0 : int64_t((from + uintptr_t(n) - 1) / 64 - from / 64 + 1);
    };
    for (int64_t hd : {32, 40, 64})
      for (int64_t len : {1, 5, 16, 37})
        for (int64_t heads : {1, 2, 3, 4, 6}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<float> qf(sz(heads * hd)), pf(sz(heads * len)), kf(sz(len * hd));
          std::vector<uint16_t> qb(qf.size()), pb(pf.size()), kb(kf.size());
          for (size_t i = 0; i < qf.size(); ++i) qf[i] = fromBf16(qb[i] = toBf16(normal(rng)));
          for (size_t i = 0; i < pf.size(); ++i) pf[i] = fromBf16(pb[i] = toBf16(std::fabs(normal(rng))));
          for (size_t i = 0; i < kf.size(); ++i) kf[i] = fromBf16(kb[i] = toBf16(normal(rng)));
          const int64_t passes = heads / 4 + (heads % 4 >= 2 ? 1 : 0) + heads % 2;  // groups of 4, 2, 1 heads
          const size_t scores = sz(heads * len), outs = sz(heads * hd);
          // One kernel call (its cached rows `elem` bytes a value) with and without each range.
          using Run = std::function<void(float*, ReadAhead)>;
          const auto check = [&](const char* name, size_t n, int64_t elem, const Run& run) -> QString {
            std::vector<float> plain(n, 1.0f);
            run(plain.data(), ReadAhead{});
            const int64_t paced = passes * len * hd * elem;
            for (int64_t offset : {0, 3})
              for (int64_t bytes : {int64_t(0), int64_t(100), paced, paced + 1000}) {
                const uintptr_t from = base + uintptr_t(offset);
                std::vector<float> with(n, 1.0f);
                const int64_t before = readAheadLinesIssued();
                run(with.data(), ReadAhead{reinterpret_cast<const void*>(from), bytes});
                const int64_t issued = readAheadLinesIssued() - before, expected = lines(from, std::min(bytes, paced));
                const QString where = QString("%1 hd %2 len %3 heads %4, range +%5 of %6 bytes")
                                          .arg(name).arg(hd).arg(len).arg(heads).arg(offset).arg(bytes);
                if (issued != expected) return where + QString(": %1 lines issued, not %2").arg(issued).arg(expected);
                if (std::memcmp(plain.data(), with.data(), n * sizeof(float)) != 0) return where + ": other bits";
              }
            return {};
          };
          const struct {
            const char* name;
            size_t n;
            int64_t elem;
            Run run;
          } calls[] = {
              {"dot f32", scores, 4,
               [&](float* s, ReadAhead a) { dotRows(qf.data(), heads, kf.data(), len, hd, s, len, a); }},
              {"dot bf16 keys", scores, 2,
               [&](float* s, ReadAhead a) { dotRows(qf.data(), heads, kb.data(), len, hd, s, len, a); }},
              {"dot bf16 pairs", scores, 2,
               [&](float* s, ReadAhead a) { dotRows(qb.data(), heads, kb.data(), len, hd, s, len, a); }},
              {"weighted f32", outs, 4,
               [&](float* o, ReadAhead a) { weightedRows(pf.data(), heads, len, kf.data(), len, hd, o, a); }},
              {"weighted bf16 values", outs, 2,
               [&](float* o, ReadAhead a) { weightedRows(pf.data(), heads, len, kb.data(), len, hd, o, a); }},
              {"weighted bf16 pairs", outs, 2,
               [&](float* o, ReadAhead a) { weightedRows(pb.data(), heads, len, kb.data(), len, hd, o, a); }},
          };
          for (const auto& c : calls) {
            const QString e = check(c.name, c.n, c.elem, c.run);
            QVERIFY2(e.isEmpty(), qPrintable(e));
          }
        }
  }

  // The kernels' two horizontal sums give the same bits, each vector's lanes halved in turn
  // (l + l+8, then +4, +2, +1): a row reduced with sixteen others or with three has one sum.
  void horizontalSumsShareOneOrder() {
    if (!f32KernelsAvailable()) QSKIP("no AVX-512F");
    std::mt19937 rng(13);
    std::normal_distribution<float> normal;
    for (int round = 0; round < 200; ++round) {
      float v[16][16], wide[16], four[16];
      for (auto& row : v)
        for (float& e : row) e = normal(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);  // magnitudes apart: order shows
      horizontalSums(v, wide, four);
      for (int i = 0; i < 16; ++i) {
        float h[16];
        std::memcpy(h, v[i], sizeof h);
        for (int width = 8; width >= 1; width /= 2)
          for (int l = 0; l < width; ++l) h[l] = h[l] + h[l + width];
        QCOMPARE(bitsOf(wide[i]), bitsOf(h[0]));
        QCOMPARE(bitsOf(four[i]), bitsOf(h[0]));
      }
    }
  }

  // Greedy sampling's argmax: the index a forward scan keeping the first strictly greater value
  // finds, on every length around the 16-lane blocks and a 128K vocabulary, with ties (the
  // first wins, -0 and +0 equal), infinities, all -inf, and NaN at the start, inside and last.
  void greedyArgmaxIsTheForwardScan() {
    const auto scan = [](const std::vector<float>& v, int64_t n) {
      int64_t b = 0;
      for (int64_t i = 1; i < n; ++i)
        if (v[size_t(i)] > v[size_t(b)]) b = i;
      return b;
    };
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    int cases = 0;
    for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 47, 64, 100, 964, 128256})
      for (int kind = 0; kind < 12; ++kind) {
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) x = kind == 1 ? 1.0f : kind == 2 ? -INFINITY : float(int(normal(rng) * 3));  // many ties
        const auto at = [&] { return size_t(rng() % uint32_t(n)); };
        if (kind == 3) v[at()] = INFINITY;
        if (kind == 4) v[0] = NAN;
        if (kind == 5) v[at()] = NAN;
        if (kind == 6) v[size_t(n - 1)] = 1e30f;
        if (kind == 7) v[at()] = v[at()] = 1e30f;
        if (kind == 8) v[size_t(n - 1)] = NAN;
        if (kind == 9)
          for (auto& x : v) x = normal(rng);
        if (kind == 10) {
          std::fill(v.begin(), v.end(), 0.0f);
          v[size_t(n / 2)] = v[0] = -0.0f;
        }
        if (kind == 11) {
          std::fill(v.begin(), v.end(), -INFINITY);
          v[size_t(n - 1)] = -1e38f;
        }
        QCOMPARE(int64_t(crosslab::infer::argmax(v.data(), size_t(n))), scan(v, n));
        ++cases;
      }
    QCOMPARE(cases, 13 * 12);
    // the maximum twice, in lane 1 (index 17) and lane 0 (index 32): the lanes' merge must
    // prefer the smaller index, not the lower lane
    std::vector<float> twice(100, 0.0f);
    twice[17] = twice[32] = 1e30f;
    QCOMPARE(crosslab::infer::argmax(twice.data(), 100), int32_t(17));
  }

  // The elementwise steps round as c10::BFloat16 does (the op-by-op path's conversion), bit
  // for bit, on every kind of float (ties to even, denormals, infinities, NaN payloads), and in
  // fp32 mode compute plain fp32; every length's tail. The same for RMSNorm's scaling, RoPE,
  // the bf16 bits of a row and its sum of squares.
  void elementwiseStepsRoundAsC10() { onEachPath({KernelCap::All, KernelCap::NoAvx512, KernelCap::Portable}, [this] { roundsAsC10(); }); }
  // The same within exp's tolerance; below for each path.
  void expShiftedIsExp() { onEachPath({KernelCap::All, KernelCap::NoAvx512, KernelCap::Portable}, [this] { expShiftedMatchesStdExp(); }); }
  void siluIsSilu() { onEachPath({KernelCap::All, KernelCap::NoAvx512, KernelCap::Portable}, [this] { siluMatchesStdExp(); }); }

 private:
  // Runs `check` with the kernels capped at each of `caps` (detail::capKernels): every kernel
  // this CPU has, the AVX2 loops in place of the AVX-512 ones (where it has AVX2; the portable
  // loop where not), the portable loops; so that each loop is checked on any CPU that has it.
  template <class F>
  void onEachPath(std::initializer_list<KernelCap> caps, F check) {
    for (KernelCap cap : caps) {
      crosslab::model::detail::capKernels(cap);
      // the loops asked for run: no AVX-512 below All, no AVX2 at Portable
      QVERIFY(cap == KernelCap::All || (!f32KernelsAvailable() && !bf16KernelsAvailable()));
      QCOMPARE(detail::avx2RowsAvailable(), cap != KernelCap::Portable && __builtin_cpu_supports("avx2"));
      check();
      if (QTest::currentTestFailed()) {
        qWarning("failed with the kernels capped at %s",
                 cap == KernelCap::All ? "none" : cap == KernelCap::NoAvx512 ? "no AVX-512" : "portable");
        break;
      }
    }
    crosslab::model::detail::capKernels(KernelCap::All);
  }

  void roundsAsC10() {
    const auto c10r = [](float x) { return float(c10::BFloat16(x)); };
    const auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; };
    std::vector<float> special = {0.0f, -0.0f, 1.0f, -1.0f, 1e-45f, -1e-45f, 1e-39f, 1.17549435e-38f, 3.4028235e38f,
                                  -3.4028235e38f, INFINITY, -INFINITY, NAN, -NAN};
    for (uint32_t bits : {0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x7F7FFFFFu, 0x7F800001u, 0xFFC12345u, 0x007FFFFFu, 0x00008000u})
      special.push_back([&] { float f; std::memcpy(&f, &bits, 4); return f; }());
    std::mt19937 rng(7);
    for (int i = 0; i < 4000; ++i) {
      const uint32_t bits = uint32_t(rng());
      float f;
      std::memcpy(&f, &bits, 4);
      special.push_back(f);
    }
    std::vector<float> v = special;
    roundBf16(v.data(), int64_t(v.size()));
    for (size_t i = 0; i < v.size(); ++i)
      QVERIFY2(same(v[i], c10r(special[i])), qPrintable(QString("%1 -> %2").arg(double(special[i])).arg(double(v[i]))));
    std::vector<uint16_t> bits16(special.size());
    toBf16Bits(special.data(), bits16.data(), int64_t(special.size()));
    for (size_t i = 0; i < special.size(); ++i)
      QVERIFY2(bits16[i] == c10::BFloat16(special[i]).x, qPrintable(QString("%1 -> %2").arg(double(special[i])).arg(bits16[i])));
    // a maximum of zero: the first zero's sign, as the sequential loop keeps the first of equal
    // values (the vector loops' lanes hold -0 and +0 here, a later +0 in the lowest lane)
    for (bool bf16 : {false, true})
      for (int first : {1, 9}) {
        std::vector<float> z(40, -1.0f);
        z[16] = z[17] = z[32] = 0.0f;  // lane 0 of a later block (of 8 and of 16)
        if (first == 1) z[8] = 0.0f;
        z[size_t(first)] = -0.0f;
        const float mx = scaleRoundMax(z.data(), int64_t(z.size()), 1.0f, bf16);
        QVERIFY2(mx == 0.0f && std::signbit(mx), qPrintable(QString("first zero at %1").arg(first)));
      }

    std::normal_distribution<float> normal;
    for (int64_t n : {1, 5, 8, 9, 16, 17, 37, 100})
      for (bool bf16 : {false, true}) {
        const auto r = [&](float x) { return bf16 ? c10r(x) : x; };
        std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        for (auto& x : a) x = normal(rng) * 3;
        for (auto& x : b) x = normal(rng) * 3;
        const QString where = QString("n %1 bf16 %2").arg(n).arg(bf16);
        std::vector<float> s = a;
        float mx = -INFINITY;
        for (int64_t t = 0; t < n; ++t) mx = std::max(mx, r(r(a[size_t(t)]) * 0.125f));
        QVERIFY2(same(scaleRoundMax(s.data(), n, 0.125f, bf16), mx), qPrintable(where));
        for (int64_t t = 0; t < n; ++t) QVERIFY2(same(s[size_t(t)], r(r(a[size_t(t)]) * 0.125f)), qPrintable(where));
        s = a;
        divideRound(s.data(), n, 3.7f, bf16);
        for (int64_t t = 0; t < n; ++t) QVERIFY2(same(s[size_t(t)], r(a[size_t(t)] / 3.7f)), qPrintable(where));
        for (bool roundY : {false, true}) {
          s = a;
          addRound(s.data(), b.data(), n, roundY, bf16);
          for (int64_t t = 0; t < n; ++t)
            QVERIFY2(same(s[size_t(t)], r(a[size_t(t)] + (roundY ? r(b[size_t(t)]) : b[size_t(t)]))), qPrintable(where));
        }
        s = a;
        mulRound(s.data(), b.data(), n, bf16);
        for (int64_t t = 0; t < n; ++t) QVERIFY2(same(s[size_t(t)], r(r(a[size_t(t)]) * b[size_t(t)])), qPrintable(where));
        // RMSNorm's scaling, weights in fp32 and as bf16 bits (the weight values bf16-exact)
        std::vector<uint16_t> wb(static_cast<size_t>(n));
        std::vector<float> wf(static_cast<size_t>(n)), o(static_cast<size_t>(n)), o2(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) {
          wb[size_t(t)] = c10::BFloat16(b[size_t(t)]).x;
          wf[size_t(t)] = fromBf16(wb[size_t(t)]);
        }
        normRound(a.data(), 0.3f, wf.data(), o.data(), n, bf16);
        normRound(a.data(), 0.3f, wb.data(), o2.data(), n, bf16);
        for (int64_t t = 0; t < n; ++t) {
          const float want = r(wf[size_t(t)] * r(a[size_t(t)] * 0.3f));
          QVERIFY2(same(o[size_t(t)], want) && same(o2[size_t(t)], want), qPrintable(where));
        }
        // RoPE over n pairs: v = [a, b] (halves of n), cos = the first half of b, sin = a's;
        // signed zeros and a NaN among v's values (-(+0) is -0, as the scalar code negates)
        std::vector<float> rv(a);
        rv.insert(rv.end(), b.begin(), b.end());
        rv[0] = -0.0f;         // x
        rv[size_t(n)] = 0.0f;  // y: x cos + (-y) sin = -0 + -0 = -0 (with 0 - y: -0 + +0 = +0)
        if (n > 2) rv[size_t(n + 1)] = NAN;
        const std::vector<float> before = rv;
        std::vector<float> cosv(b), sinv(a);
        cosv[0] = std::fabs(cosv[0]);
        sinv[0] = std::fabs(sinv[0]);
        ropeRound(rv.data(), cosv.data(), sinv.data(), n, bf16);
        for (int64_t t = 0; t < n; ++t) {
          const float x = before[size_t(t)], y = before[size_t(n + t)], cs = cosv[size_t(t)], sn = sinv[size_t(t)];
          QVERIFY2(same(rv[size_t(t)], r(r(x * cs) + r(-y * sn))), qPrintable(where));
          QVERIFY2(same(rv[size_t(n + t)], r(r(y * cs) + r(x * sn))), qPrintable(where));
        }
        // Σ x² in double: lane j sums x[j], x[j+8], … in order, then the lanes in order
        double lanes[8] = {};
        for (int64_t t = 0; t < n; ++t) lanes[t % 8] += double(a[size_t(t)]) * double(a[size_t(t)]);
        double sq = 0;
        for (double l : lanes) sq += l;
        const double got = sumSquares(a.data(), n);
        QVERIFY2(std::memcmp(&got, &sq, sizeof sq) == 0, qPrintable(where));  // bit for bit, not fuzzy
      }
  }

  // Within 2 ulp of std::exp over softmax's range (below e^-87 both are ~0), and the returned sum.
  void expShiftedMatchesStdExp() {
    {  // a NaN score stays NaN (as std::exp), in a vector block and in the tail; the sum too
      std::vector<float> s(19, -1.0f);
      s[2] = NAN;
      QVERIFY(std::isnan(expShifted(s.data(), 19, 0.0f)) && std::isnan(s[2]) && !std::isnan(s[3]));
      s.assign(19, -1.0f);
      s[17] = NAN;
      QVERIFY(std::isnan(expShifted(s.data(), 19, 0.0f)) && std::isnan(s[17]));
    }
    for (int64_t len : {1, 7, 8, 9, 15, 16, 17, 1000}) {
      std::vector<float> s(static_cast<size_t>(len));
      for (int64_t t = 0; t < len; ++t)  // from 3 - 100 up to the maximum, 3, as softmax subtracts it
        s[size_t(t)] = 3.0f - 100.0f * float(len - 1 - t) / float(std::max<int64_t>(1, len - 1));
      const std::vector<float> in = s;
      const float sum = expShifted(s.data(), len, 3.0f);
      double want = 0;
      for (int64_t t = 0; t < len; ++t) {
        const float e = std::exp(in[size_t(t)] - 3.0f);
        want += e;
        QVERIFY2(std::fabs(s[size_t(t)] - e) <= 2.5e-7f * e + 1e-37f, qPrintable(QString("%1 vs %2").arg(s[size_t(t)]).arg(e)));
      }
      QVERIFY2(std::fabs(sum - want) <= 1e-5 * want, qPrintable(QString("len %1: %2 vs %3").arg(len).arg(sum).arg(want)));  // fp32 sums
    }
  }

  void siluMatchesStdExp() {
    std::vector<float> nan(19, 1.0f);  // NaN in, NaN out, in a vector block and in the tail
    nan[3] = nan[18] = NAN;
    siluInPlace(nan.data(), int64_t(nan.size()));
    QVERIFY(std::isnan(nan[3]) && std::isnan(nan[18]) && !std::isnan(nan[4]));
    std::vector<float> g;
    for (float x = -120.0f; x <= 120.0f; x += 0.37f) g.push_back(x);
    const std::vector<float> in = g;
    siluInPlace(g.data(), int64_t(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      const float want = in[i] / (1.0f + std::exp(-in[i]));
      QVERIFY2(std::fabs(g[i] - want) <= 5e-7f * std::fabs(want) + 1e-37f, qPrintable(QString("%1: %2 vs %3").arg(in[i]).arg(g[i]).arg(want)));
    }
  }
};

QTEST_GUILESS_MAIN(TestCpuMatmul)
#include "test_cpu_matmul.moc"
