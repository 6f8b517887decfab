// The attention rows of the fused decode step (core/model/cpu_attention.h): near the exact sums,
// each head of a group bit-identical to the head alone, f32 and bf16; without the AVX-512
// kernels the sequential sums bit for bit, from row-major keys or keys kept in blocks; reading
// ahead changes no bit.
#include "tests/model/cpu_kernel_testing.h"  // first: see there

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/cpu_attention.h"

using namespace crosslab::model;
using namespace crosslab::model::testing;

class TestCpuAttention : public QObject {
  Q_OBJECT

 private slots:
  // Checked on every CPU: with the AVX-512 kernels held back, the AVX2 loops (where the CPU has
  // AVX2), and the portable loop.
  void attentionRowsWithoutKernelsAreTheSequentialSums() {
    onEachPath({KernelCap::NoAvx512, KernelCap::Portable}, [this] { attentionRowsAreSequentialSums(); });
  }

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
  // ranges shorter and longer than that, unaligned, and empty. The AVX-512 kernels (where the CPU
  // has them), then the AVX2 loops that read ahead (the scores from keys in blocks, the weighted
  // values: two heads a pass).
  void readAheadIssuesItsLinesAndKeepsTheBits() {
    if (!bf16KernelsAvailable() && !__builtin_cpu_supports("avx2"))
      QSKIP("neither AVX-512 kernels nor AVX2: the portable loops do not read ahead");
    if (bf16KernelsAvailable()) readAheadOnPath(false);
    if (QTest::currentTestFailed() || !__builtin_cpu_supports("avx2")) return;
    detail::capKernels(KernelCap::NoAvx512);
    readAheadOnPath(true);
    detail::capKernels(KernelCap::All);
  }

 private:
  void readAheadOnPath(bool avx2) {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal;
    std::vector<char> other(40000);
    const uintptr_t base = (reinterpret_cast<uintptr_t>(other.data()) + 63) & ~uintptr_t(63);
    const auto lines = [](uintptr_t from, int64_t n) {  // the cache lines [from, from + n) touches
      return n <= 0 ? 0 : int64_t((from + uintptr_t(n) - 1) / 64 - from / 64 + 1);
    };
    for (int64_t hd : {32, 40, 64})
      for (int64_t len : {1, 5, 16, 29, 37})  // 29: four blocks of keys, the last one partial
        for (int64_t heads : {1, 2, 3, 4, 6}) {
          const auto sz = [](int64_t m) { return static_cast<size_t>(m); };
          std::vector<float> qf(sz(heads * hd)), pf(sz(heads * len)), kf(sz(len * hd));
          std::vector<uint16_t> qb(qf.size()), pb(pf.size()), kb(kf.size());
          for (size_t i = 0; i < qf.size(); ++i) qf[i] = fromBf16(qb[i] = toBf16(normal(rng)));
          for (size_t i = 0; i < pf.size(); ++i) pf[i] = fromBf16(pb[i] = toBf16(std::fabs(normal(rng))));
          for (size_t i = 0; i < kf.size(); ++i) kf[i] = fromBf16(kb[i] = toBf16(normal(rng)));
          std::vector<float> blocksf(sz((len + 7) / 8 * 8 * hd));
          std::vector<uint16_t> blocksb(blocksf.size());
          copyToKeyBlocks(kf.data(), 0, len, hd, blocksf.data());
          copyToKeyBlocks(kb.data(), 0, len, hd, blocksb.data());
          // passes over the rows: AVX-512 groups of 4, 2, 1 heads; AVX2 weighted two heads a pass
          const int64_t passes = avx2 ? (heads + 1) / 2 : heads / 4 + (heads % 4 >= 2 ? 1 : 0) + heads % 2;
          const size_t scores = sz(heads * len), outs = sz(heads * hd);
          // One kernel call (its cached rows `elem` bytes a value, read in `reads` passes) with and
          // without each range.
          using Run = std::function<void(float*, ReadAhead)>;
          const auto check = [&](const char* name, size_t n, int64_t elem, int64_t reads, const Run& run) -> QString {
            std::vector<float> plain(n, 1.0f);
            run(plain.data(), ReadAhead{});
            const int64_t paced = reads * len * hd * elem;
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
          struct Call {
            const char* name;
            size_t n;
            int64_t elem, reads;
            Run run;
          };
          const std::vector<Call> weighted = {
              {"weighted f32", outs, 4, passes,
               [&](float* o, ReadAhead a) { weightedRows(pf.data(), heads, len, kf.data(), len, hd, o, a); }},
              {"weighted bf16 values", outs, 2, passes,
               [&](float* o, ReadAhead a) { weightedRows(pf.data(), heads, len, kb.data(), len, hd, o, a); }},
              {"weighted bf16 pairs", outs, 2, passes,
               [&](float* o, ReadAhead a) { weightedRows(pb.data(), heads, len, kb.data(), len, hd, o, a); }},
          };
          std::vector<Call> calls;
          if (avx2) {
            calls = {{"dot f32 key blocks", scores, 4, 1,
                      [&](float* s, ReadAhead a) { dotKeyBlocks(qf.data(), heads, blocksf.data(), len, hd, s, len, a); }},
                     {"dot bf16 key blocks", scores, 2, 1,
                      [&](float* s, ReadAhead a) { dotKeyBlocks(qf.data(), heads, blocksb.data(), len, hd, s, len, a); }}};
          } else {
            calls = {{"dot f32", scores, 4, passes,
                      [&](float* s, ReadAhead a) { dotRows(qf.data(), heads, kf.data(), len, hd, s, len, a); }},
                     {"dot bf16 keys", scores, 2, passes,
                      [&](float* s, ReadAhead a) { dotRows(qf.data(), heads, kb.data(), len, hd, s, len, a); }},
                     {"dot bf16 pairs", scores, 2, passes,
                      [&](float* s, ReadAhead a) { dotRows(qb.data(), heads, kb.data(), len, hd, s, len, a); }}};
          }
          calls.insert(calls.end(), weighted.begin(), weighted.end());
          for (const auto& c : calls) {
            const QString e = check(c.name, c.n, c.elem, c.reads, c.run);
            QVERIFY2(e.isEmpty(), qPrintable((avx2 ? "AVX2: " : "AVX-512: ") + e));
          }
        }
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
          // The same scores from keys kept in blocks, copied in two appends as the fused step
          // copies them; the last block's lanes past len hold NaN, which reaches no score.
          const int64_t blocks = (len + 7) / 8;
          std::vector<float> blocked(sz(blocks * hd * 8), NAN);
          std::vector<uint16_t> blockedb(blocked.size(), 0x7FC0);
          copyToKeyBlocks(k.data(), 0, len / 2, hd, blocked.data());
          copyToKeyBlocks(k.data(), len / 2, len, hd, blocked.data());
          copyToKeyBlocks(kb.data(), 0, len / 2, hd, blockedb.data());
          copyToKeyBlocks(kb.data(), len / 2, len, hd, blockedb.data());
          for (int64_t t = 0; t < len; ++t)
            for (int64_t d = 0; d < hd; ++d) {
              const size_t at = sz((t / 8) * hd * 8 + d * 8 + t % 8);
              QVERIFY(std::memcmp(&blocked[at], &k[sz(t * hd + d)], 4) == 0 && blockedb[at] == kb[sz(t * hd + d)]);
            }
          std::fill(s.begin(), s.end(), -1.0f);
          std::fill(sb.begin(), sb.end(), -1.0f);
          dotKeyBlocks(q.data(), heads, blocked.data(), len, hd, s.data(), ss);
          dotKeyBlocks(q.data(), heads, blockedb.data(), len, hd, sb.data(), ss);
          QVERIFY2(std::memcmp(s.data(), want.data(), sizeof(float) * s.size()) == 0, qPrintable("blocked f32 " + what));
          QVERIFY2(std::memcmp(sb.data(), want.data(), sizeof(float) * s.size()) == 0, qPrintable("blocked bf16 " + what));
          std::vector<float> out = base, outb = base, wantOut = base;
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < len; ++t)
              for (int64_t d = 0; d < hd; ++d) wantOut[sz(h * hd + d)] += p[sz(h * ss + t)] * k[sz(t * hd + d)];
          weightedRows(p.data(), heads, ss, k.data(), len, hd, out.data());
          weightedRows(p.data(), heads, ss, kb.data(), len, hd, outb.data());
          QVERIFY2(std::memcmp(out.data(), wantOut.data(), sizeof(float) * out.size()) == 0, qPrintable("values f32 " + what));
          QVERIFY2(std::memcmp(outb.data(), wantOut.data(), sizeof(float) * out.size()) == 0, qPrintable("values bf16 " + what));
          checked += 6;
        }
    QCOMPARE(checked, 6 * 9 * 2 * 6);
  }
};

QTEST_GUILESS_MAIN(TestCpuAttention)
#include "test_cpu_attention.moc"
