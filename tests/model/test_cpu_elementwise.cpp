// The fused decode step's elementwise steps (core/model/cpu_elementwise.h) on every path the CPU
// has (AVX-512, AVX2, portable): bf16 rounding as c10 does, bit for bit, and exp within 2 ulp.
#include "tests/model/cpu_kernel_testing.h"  // first: see there

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/cpu_elementwise.h"

using namespace crosslab::model;
using namespace crosslab::model::testing;

class TestCpuElementwise : public QObject {
  Q_OBJECT

 private slots:
  // The elementwise steps round as c10::BFloat16 does (the op-by-op path's conversion), bit
  // for bit, on every kind of float (ties to even, denormals, infinities, NaN payloads), and in
  // fp32 mode compute plain fp32; every length's tail. The same for RMSNorm's scaling, RoPE,
  // the bf16 bits of a row and its sum of squares.
  void elementwiseStepsRoundAsC10() { onEveryPath([this] { roundsAsC10(); }); }
  // The same within exp's tolerance; below for each path.
  void expShiftedIsExp() { onEveryPath([this] { expShiftedMatchesStdExp(); }); }
  void siluIsSilu() { onEveryPath([this] { siluMatchesStdExp(); }); }

 private:
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

QTEST_GUILESS_MAIN(TestCpuElementwise)
#include "test_cpu_elementwise.moc"
