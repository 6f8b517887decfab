// The decode kernels of core/model/cpu_matmul.h against double-precision sums: every kernel
// (n = 1, tiles for 2..15 rows, packed 16..64 and a second chunk), row and k tails (odd k
// too), fp32 and bf16; the LoRA expands; the kernels' horizontal sums and greedy argmax.
// (Attention rows: test_cpu_attention; elementwise steps: test_cpu_elementwise.)
#include "tests/model/cpu_kernel_testing.h"  // first: see there

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "core/infer/sampler.h"
#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_matmul.h"

using namespace crosslab::model;
using namespace crosslab::model::testing;

namespace {

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
  MatmulRows<T> xr(x.data(), n, k, buffer);
  // bf16: X's values also as fp32, as the engine gives them (MatmulRows::widen; without the
  // AVX-512 BF16 kernels the AVX2 packed loop reads them packed, into a buffer of NaNs too).
  std::vector<float> xf(x.size()), wideBuffer(size_t((n + 64) * (k + 1)), NAN), ownWide;
  for (size_t i = 0; i < x.size(); ++i) xf[i] = float(xd[i]);
  if constexpr (!std::is_same_v<T, float>) xr.widen(xf.data(), wideBuffer);
  const int64_t split = rows / 3;  // two calls, as two threads would split W's rows
  matmulRows(w.data(), split, xr, y.data(), ldy);
  matmulRows(w.data() + split * k, rows - split, xr, y.data() + split, ldy);
  {  // a fresh buffer of its own gives the same bits
    std::vector<float> y2(y.size(), NAN);
    MatmulRows<T> own(x.data(), n, k);
    if constexpr (!std::is_same_v<T, float>) own.widen(xf.data(), ownWide);
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
    // every kernel the CPU has, and the AVX2 loops where it has AVX-512 too
    onEachPath({KernelCap::All, KernelCap::NoAvx512}, [&] {
      const double f32 = worstRelative<float>(rows, k, n, unsigned(rows * 7 + k + n));
      const double bf16 = worstRelative<uint16_t>(rows, k, n, unsigned(rows * 5 + k + n));
      QVERIFY2(f32 < 1e-6, qPrintable(QString::number(f32)));
      QVERIFY2(bf16 < 1e-6, qPrintable(QString::number(bf16)));  // bf16 inputs, fp32 accumulation
    });
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
  // The packed kernels at 16 X rows (one vector: eight steps of k at a time) and at more (one
  // step at a time) give an X row the same bits: each accumulator adds its products in k's
  // order. fp32: that is the chain of fused multiply-adds over k, from zero. Rows in and out of
  // the tiles of 16 W rows, k shorter than a block of eight, with and without a tail.
  //
  // Without the AVX-512 kernels, the AVX2 packed loop (detail::matmulPackedAvx2): the same
  // chain for fp32, and for bf16 (its products exact in fp32, widened as read) the chain over
  // the fp32 values; at 16 X rows (tiles of six W rows by two vectors), 40 (three W rows by a
  // group of four vectors, then a group of eight rows in two) and 64 (two groups of four), k
  // past one widened slice of 1 024.
  void packedRowsSumInOrderAtEveryWidth() {
    const auto check = [](auto tag, int64_t rows, int64_t k, int64_t n) -> QString {
      using T = decltype(tag);
      constexpr bool f32 = std::is_same_v<T, float>;
      const bool avx512 = f32 ? f32KernelsAvailable() : bf16KernelsAvailable();
      if (!avx512 && !detail::avx2PackedAvailable()) return {};
      std::mt19937 rng(unsigned(rows * 3 + k + n));
      std::normal_distribution<float> normal;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = f32 ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = f32 ? T(normal(rng)) : T(toBf16(normal(rng)));
      const auto value = [](T v) { return f32 ? float(v) : fromBf16(uint16_t(v)); };
      std::vector<float> xf(x.size());
      for (size_t i = 0; i < x.size(); ++i) xf[i] = value(x[i]);
      const auto product = [&](int64_t from, int64_t count, float* y) {
        MatmulRows<T> rows16(x.data() + from * k, count, k);
        std::vector<float> wide;
        if constexpr (!f32) rows16.widen(xf.data() + from * k, wide);
        matmulRows(w.data(), rows, rows16, y, rows);
      };
      std::vector<float> all(size_t(n * rows)), part(size_t(16 * rows));
      product(0, n, all.data());
      for (int64_t from : {int64_t(0), n - 16}) {
        product(from, 16, part.data());
        if (std::memcmp(part.data(), all.data() + from * rows, sizeof(float) * part.size()) != 0)
          return QString("X rows %1..%2 alone differ from the same rows among %3").arg(from).arg(from + 15).arg(n);
      }
      if (f32 || !avx512)
        for (int64_t b = 0; b < n; ++b)
          for (int64_t r = 0; r < rows; ++r) {
            float chain = 0;
            for (int64_t i = 0; i < k; ++i)
              chain = std::fma(value(w[size_t(r * k + i)]), xf[size_t(b * k + i)], chain);
            if (std::memcmp(&chain, &all[size_t(b * rows + r)], sizeof chain) != 0)
              return QString("row %1 of X, row %2 of W: not the fused chain over k").arg(b).arg(r);
          }
      return {};
    };
    if (!f32KernelsAvailable() && !detail::avx2PackedAvailable()) QSKIP("no packed kernels");
    // every packed kernel the CPU has: the AVX-512 ones, and the AVX2 loop where they are not used
    onEachPath({KernelCap::All, KernelCap::NoAvx512}, [&] {
      int checked = 0;
      for (int64_t n : {16, 40, 64})
        for (int64_t rows : {16, 37})
          for (int64_t k : {1, 7, 8, 17, 128, 389, 1100}) {
            const QString what = QString(" n %1 rows %2 k %3: ").arg(n).arg(rows).arg(k);
            const QString f32 = check(float{}, rows, k, n), bf16 = check(uint16_t{}, rows, k, n);
            QVERIFY2(f32.isEmpty(), qPrintable("f32" + what + f32));
            QVERIFY2(bf16.isEmpty(), qPrintable("bf16" + what + bf16));
            ++checked;
          }
      QCOMPARE(checked, 3 * 2 * 7);
    });
  }

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
  // of its blocks of four, k with and without a tail of fewer than eight, one and many X rows
  // (at 8+ a bf16 W is widened a slice of k at a time: one slice, and three for k 2100); bf16
  // also with X given as fp32 (MatmulRows::widened).
  void avx2RowsArePortableBitForBit() {
    if (!detail::avx2RowsAvailable()) QSKIP("no AVX2");
    const auto check = [](auto tag, int64_t rows, int64_t k, int64_t n) {
      using T = decltype(tag);
      std::mt19937 rng(unsigned(rows * 7 + k * 13 + n));
      std::normal_distribution<float> normal;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      MatmulRows<T> xr(x.data(), n, k);
      const int64_t ldy = rows + 3;
      std::vector<float> fast(size_t(n * ldy), -1.0f), slow(fast.size(), -1.0f);
      detail::matmulRowsAvx2(w.data(), rows, xr, fast.data(), ldy);
      detail::matmulRowsPortable(w.data(), rows, xr, slow.data(), ldy);
      bool same = std::memcmp(fast.data(), slow.data(), sizeof(float) * fast.size()) == 0;
      if constexpr (!std::is_same_v<T, float>) {  // X also given as fp32
        std::vector<float> xf(x.size());
        for (size_t i = 0; i < x.size(); ++i) xf[i] = fromBf16(x[i]);
        xr.widened = xf.data();
        std::vector<float> wide(fast.size(), -1.0f);
        detail::matmulRowsAvx2(w.data(), rows, xr, wide.data(), ldy);
        same = same && std::memcmp(wide.data(), slow.data(), sizeof(float) * wide.size()) == 0;
      }
      return same;
    };
    int checked = 0;
    for (int64_t rows : {1, 3, 4, 9, 64})
      for (int64_t k : {1, 7, 8, 33, 128, 389, 2100})  // 2100: a bf16 W widened in three slices
        for (int64_t n : {1, 2, 5, 9, 12}) {  // 9 and 12 widened: an odd row after the pairs, and none
          const QString what = QString("rows %1 k %2 n %3").arg(rows).arg(k).arg(n);
          QVERIFY2(check(float{}, rows, k, n), qPrintable("f32 " + what));
          QVERIFY2(check(uint16_t{}, rows, k, n), qPrintable("bf16 " + what));
          checked += 2;
        }
    QCOMPARE(checked, 5 * 7 * 5 * 2);
  }

  // A W share of 512 KB or more (an LM head, a larger model's matrices) makes the AVX2 loop
  // request each block of four rows two blocks before it reads it, one line per 64 bytes (a
  // partial line at each end), every block whose block ahead lies within W; a smaller share
  // requests nothing. Either way the products stay the portable loop's bit for bit.
  void avx2RowsReadLargeMatricesAhead() {
    if (!detail::avx2RowsAvailable()) QSKIP("no AVX2");
    const auto check = [](auto tag, int64_t rows, int64_t k, int64_t n) -> QString {
      using T = decltype(tag);
      std::mt19937 rng(unsigned(rows + k + n));
      std::normal_distribution<float> normal;
      std::vector<T> w(size_t(rows * k)), x(size_t(n * k));
      for (auto& v : w) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      for (auto& v : x) v = std::is_same_v<T, float> ? T(normal(rng)) : T(toBf16(normal(rng)));
      MatmulRows<T> xr(x.data(), n, k);
      std::vector<float> fast(size_t(n * rows), -1.0f), slow(fast.size(), -1.0f);
      const int64_t before = detail::matmulAheadLinesIssued();
      detail::matmulRowsAvx2(w.data(), rows, xr, fast.data(), rows);
      const int64_t issued = detail::matmulAheadLinesIssued() - before;
      detail::matmulRowsPortable(w.data(), rows, xr, slow.data(), rows);
      const int64_t bytes = rows * k * int64_t(sizeof(T));
      const int64_t perBlock = (4 * k * int64_t(sizeof(T)) + 63) / 64 + 1;
      // an f32 W at one X row is not read ahead: there the requests slowed the hardware's own
      // prefetch (the 1B shapes' down projection, one thread: 17-18 GB/s with, 28-29 without)
      const bool reads = bytes >= (512 << 10) && (std::is_same_v<T, uint16_t> || n > 1);
      const int64_t expected = reads ? std::max<int64_t>(0, rows / 4 - 2) * perBlock : 0;
      if (issued != expected) return QString("%1 lines requested, %2 expected").arg(issued).arg(expected);
      if (std::memcmp(fast.data(), slow.data(), sizeof(float) * fast.size()) != 0) return "not the portable sums";
      return {};
    };
    int ahead = 0;
    for (int64_t rows : {1030, 300, 64})
      for (int64_t k : {389, 768})
        for (int64_t n : {1, 2, 5, 9}) {  // 9: a bf16 W widened, the block ahead requested over its pairs
          const QString what = QString(" rows %1 k %2 n %3: ").arg(rows).arg(k).arg(n);
          QString f32 = check(float{}, rows, k, n), bf16 = check(uint16_t{}, rows, k, n);
          QVERIFY2(f32.isEmpty(), qPrintable("f32" + what + f32));
          QVERIFY2(bf16.isEmpty(), qPrintable("bf16" + what + bf16));
          ahead += (rows * k * 4 >= (512 << 10) && n > 1) + (rows * k * 2 >= (512 << 10));
        }
    // 1030 rows at both k and types, 300 rows only f32 at k 768; 64 never; f32 not at one X row
    QCOMPARE(ahead, 3 * 3 + 2 * 4);
  }

  // Without AVX512-BF16, the LoRA expands are the sequential sums bit for bit (each output over
  // i in order, a multiply then an add): the AVX2 loops' up to 64 outputs at a time (eight
  // vectors' sums in flight), their tails and the packed layout's blocks change nothing.
  // Checked on every CPU: with the AVX-512 kernels held back, the AVX2 loops (where the CPU has
  // AVX2), and the portable loop.
  void expandsWithoutKernelsAreTheSequentialSums() {
    onEachPath({KernelCap::NoAvx512, KernelCap::Portable}, [this] { expandsAreSequentialSums(); });
  }

 private:
  void expandsAreSequentialSums() {
    std::mt19937 rng(31);
    std::normal_distribution<float> normal;
    int checked = 0;
    for (int64_t k : {1, 2, 7, 16, 17, 33})
      for (int64_t out : {1, 7, 8, 9, 64, 65, 100, 130, 200})  // 1-8 vectors at a time, parts of one
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
    QCOMPARE(checked, 6 * 9 * 2 * 3);
  }

 private slots:

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
  // finds, on every length around the 4 x 16-lane (AVX-512) and 4 x 8-lane (AVX2) blocks and a
  // 128K vocabulary, with ties (the first wins, -0 and +0 equal), infinities, all -inf, and NaN at
  // the start, inside and last; on each path the CPU has, and through argmax() itself.
  void greedyArgmaxIsTheForwardScan() {
    using crosslab::infer::detail::ArgmaxPath;
    std::vector<ArgmaxPath> paths{ArgmaxPath::Scalar};
    if (__builtin_cpu_supports("avx2")) paths.push_back(ArgmaxPath::Avx2);
    if (__builtin_cpu_supports("avx512f")) paths.push_back(ArgmaxPath::Avx512);
    const auto scan = [](const std::vector<float>& v, int64_t n) {
      int64_t b = 0;
      for (int64_t i = 1; i < n; ++i)
        if (v[size_t(i)] > v[size_t(b)]) b = i;
      return b;
    };
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    int cases = 0;
    for (int64_t n :
         {1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 96, 100, 127, 128, 129, 191, 192, 255, 257, 964, 128256})
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
        for (ArgmaxPath path : paths)
          QVERIFY2(int64_t(crosslab::infer::detail::argmaxOn(path, v.data(), size_t(n))) == scan(v, n),
                   qPrintable(QString("path %1, n %2, kind %3").arg(int(path)).arg(n).arg(kind)));
        ++cases;
      }
    QCOMPARE(cases, 23 * 12);
    // the maximum twice, in lane 1 (index 17) and lane 0 (index 32): the lanes' merge must
    // prefer the smaller index, not the lower lane (AVX2: the third vector's lane 1 and the
    // first vector's lane 0 of the next block)
    std::vector<float> twice(100, 0.0f);
    twice[17] = twice[32] = 1e30f;
    for (ArgmaxPath path : paths) QCOMPARE(crosslab::infer::detail::argmaxOn(path, twice.data(), 100), int32_t(17));
    // AVX-512: index 48 (the fourth vector's lane 0) and 65 (the next block's first vector, lane 1)
    std::fill(twice.begin(), twice.end(), 0.0f);
    twice[48] = twice[65] = 1e30f;
    for (ArgmaxPath path : paths) QCOMPARE(crosslab::infer::detail::argmaxOn(path, twice.data(), 100), int32_t(48));
  }

};

QTEST_GUILESS_MAIN(TestCpuMatmul)
#include "test_cpu_matmul.moc"
