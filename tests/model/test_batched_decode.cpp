// The batched fused decode step (core/model/llama_decode_cpu.cpp) on tiny checkpoints: B
// sequences at different positions, each in its own KV-cache row, decoded together for
// several steps, against
//   1. the op-by-op path on the same batch (LlamaModel::setFastDecode(false)),
//   2. each sequence decoded alone (the fused step at B = 1),
//   3. the independent PyTorch reference (tests/model/ref_llama.py) on each full sequence,
//   4. the fused step with its rows split into 3 groups on 3 threads (LlamaModel::setDecodeSplit;
//      uneven groups, adapters' rows across group boundaries), and as one group whose large
//      products split over the same threads (bit for bit the one-thread step),
//   5. the same step's logits through logits(hidden()) instead of forward() (where the fused
//      step runs the LM head in each row group): bit for bit,
// logits of every decode step and their greedy ids; fp32 and bf16, without and with runtime
// LoRA (rows of adapter a, adapter b and no adapter in one batch). The batch sizes reach every
// kernel of core/model/cpu_matmul.h (1 row, row tiles of 1..4, packed 16/32/48/64 lanes, and
// a second 64-row chunk), and the shapes their tails (k = 128, 224, LoRA r = 8 and an odd 5).
// ATen before Qt: Qt's `slots` keyword macro would break ATen's IValue::slots().
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "core/infer/runtime_lora.h"
#include "core/model/cpu_matmul.h"
#include "core/model/llama.h"
#include "core/model/safetensors_writer.h"
#include "tests/model/tiny_llama.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;
using crosslab::testing::TinyLlamaSpec;

namespace {

using Logits = std::vector<std::vector<float>>;  // [step][row * vocab + v]

QByteArray runReference(const QStringList& args) {
  const auto r = crosslab::testing::runProgram(PYTHON3, QStringList{REF_LLAMA_PY} + args);
  if (r.code != 0) qWarning() << r.err;
  return r.out;
}

std::vector<float> readFloats(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray bytes = f.readAll();
  std::vector<float> v(size_t(bytes.size()) / 4);
  std::memcpy(v.data(), bytes.constData(), v.size() * 4);
  return v;
}

QString seqsJson(const std::vector<std::vector<int64_t>>& seqs) {
  QJsonArray all;
  for (const auto& s : seqs) {
    QJsonArray a;
    for (int64_t id : s) a.append(qint64(id));
    all.append(a);
  }
  return QString::fromUtf8(QJsonDocument(all).toJson(QJsonDocument::Compact));
}

// Row b of a cache as a one-row cache (views: writes land in the shared tensors).
model::KvCache rowView(model::KvCache& c, int64_t b) {
  model::KvCache v;
  v.capacity = c.capacity;
  for (size_t l = 0; l < c.keys.size(); ++l) {
    v.keys.push_back(c.keys[l].narrow(0, b, 1));
    v.values.push_back(c.values[l].narrow(0, b, 1));
  }
  v.lengths = {c.lengths[size_t(b)]};
  return v;
}

int64_t argmax(const float* v, int64_t n) { return int64_t(std::max_element(v, v + n) - v); }

double maxAbs(const Logits& a) {
  double m = 0;
  for (const auto& s : a)
    for (float x : s) m = std::max(m, double(std::fabs(x)));
  return m;
}

double maxAbsDiff(const Logits& a, const Logits& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    if (a[s].size() != b[s].size()) return INFINITY;
    for (size_t i = 0; i < a[s].size(); ++i) m = std::max(m, double(std::fabs(a[s][i] - b[s][i])));
  }
  return m;
}

struct Batch {
  std::vector<std::vector<int64_t>> prompts;
  std::vector<int> adapters;  // per row: index into the loaded adapters, -1 = none
};

class Decoder {
 public:
  Decoder(const std::string& dir, at::ScalarType dtype, const std::vector<std::string>& adapterDirs)
      : model_(model::LlamaModel::load(dir, dtype, at::kCPU)) {
    for (size_t i = 0; i < adapterDirs.size(); ++i)
      adapters_.push_back(infer::loadLoraAdapter("a" + std::to_string(i), adapterDirs[i], model_));
  }
  int64_t vocab() const { return model_.config().vocabSize; }
  model::DecodeTimes times;  // of the last run's fused decode steps

  // Prefills rows [first, first + n) of `batch` (all but each prompt's last token, one row at a
  // time, op by op), then runs `steps` decode steps over those rows together. feed: the tokens
  // to feed after the prompt (teacher forcing); empty = greedy, written back into *fed.
  // split: the fused step's row groups (LlamaModel::setDecodeSplit). viaForward: the step's
  // logits from forward() (the fused step runs the LM head itself), else logits(hidden()).
  Logits run(const Batch& batch, size_t first, size_t n, int steps, bool fused, std::vector<std::vector<int64_t>>* fed,
             int split = 1, bool viaForward = true) {
    c10::InferenceMode guard;
    model::KvCache cache = model_.makeCache(int64_t(n), 64);
    // The prompts go through the op-by-op forward on one thread in every run: its fp32 products
    // are libtorch's, whose sums may depend on the thread count (OpenBLAS's AVX2 sgemm does, on a
    // CPU without AVX-512), and the runs compare decode steps from the same cache. (Its bf16
    // products are ours where the CPU lacks AVX512-BF16, the fused step's kernels.)
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    for (size_t b = 0; b < n; ++b) {
      const auto& p = batch.prompts[first + b];
      if (p.size() < 2) continue;
      model::KvCache view = rowView(cache, int64_t(b));
      setDelta({batch.adapters[first + b]});
      model_.hidden(at::tensor(std::vector<int64_t>(p.begin(), p.end() - 1), at::kLong).unsqueeze(0), &view);
      cache.lengths[b] = view.lengths[0];
    }
    at::set_num_threads(threads);
    std::vector<int> rowAdapters(batch.adapters.begin() + long(first), batch.adapters.begin() + long(first + n));
    setDelta(rowAdapters);
    model_.setFastDecode(fused);
    model_.setDecodeSplit(split);
    times = {};
    model_.setDecodeTimes(&times);
    Logits out;
    std::vector<int64_t> ids(n);
    for (size_t b = 0; b < n; ++b) ids[b] = batch.prompts[first + b].back();
    const bool greedy = fed->size() < first + n || (*fed)[first].empty();
    if (fed->size() < first + n) fed->resize(first + n);
    for (int s = 0; s < steps; ++s) {
      const at::Tensor input = at::tensor(ids, at::kLong).view({int64_t(n), 1});
      if (fused && !model_.fusedDecodeApplies(input, &cache)) throw std::runtime_error("the fused step does not apply");
      const at::Tensor logits =
          (viaForward ? model_.forward(input, &cache) : model_.logits(model_.hidden(input, &cache))).contiguous();  // [n, 1, vocab]
      out.emplace_back(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
      for (size_t b = 0; b < n; ++b) {
        auto& f = (*fed)[first + b];
        if (greedy) f.push_back(argmax(out.back().data() + b * size_t(vocab()), vocab()));
        ids[b] = f[size_t(s)];
      }
    }
    model_.setFastDecode(true);
    model_.setDecodeSplit(1);
    model_.setDecodeTimes(nullptr);
    model_.setProjectionDelta(nullptr);
    return out;
  }

 private:
  void setDelta(const std::vector<int>& rowAdapters) {
    const bool any = std::any_of(rowAdapters.begin(), rowAdapters.end(), [](int a) { return a >= 0; });
    model_.setProjectionDelta(any ? std::make_shared<infer::BatchLoraDelta>(adapters_, rowAdapters, at::kCPU) : nullptr);
  }

  model::LlamaModel model_;
  std::vector<infer::LoraAdapter> adapters_;
};

}  // namespace

class TestBatchedDecode : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string dir_;
  std::vector<std::string> adapters_;
  TinyLlamaSpec spec_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    spec_.hidden = 128;
    spec_.intermediate = 224;
    spec_.heads = 4;
    spec_.kvHeads = 2;
    spec_.attentionBias = true;
    spec_.seed = 23;
    dir_ = tmp_.filePath("model").toStdString();
    crosslab::testing::writeTinyLlama(dir_, spec_);
    adapters_ = {tmp_.filePath("lora-r8").toStdString(), tmp_.filePath("lora-r5").toStdString()};
    crosslab::testing::writeTinyLora(adapters_[0], spec_, 8, 16.0, false, 3);
    crosslab::testing::writeTinyLora(adapters_[1], spec_, 5, 10.0, false, 4);
  }

  void batchedEqualsOpByOpSequentialAndReference_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("lora");
    for (int rows : {3, 6, 9, 20, 37, 70}) QTest::addRow("f32 B=%d", rows) << "f32" << rows << false;
    for (int rows : {2, 7, 24, 48}) QTest::addRow("f32 B=%d mixed LoRA", rows) << "f32" << rows << true;
    for (int rows : {5, 20}) QTest::addRow("bf16 B=%d", rows) << "bf16" << rows << false;
    for (int rows : {4, 18}) QTest::addRow("bf16 B=%d mixed LoRA", rows) << "bf16" << rows << true;
  }

  void batchedEqualsOpByOpSequentialAndReference() {
    QFETCH(QString, dtype);
    QFETCH(int, rows);
    QFETCH(bool, lora);
    const bool bf16 = dtype == "bf16";
    const int steps = 6;
    const size_t n = size_t(rows);
    Decoder dec(dir_, bf16 ? at::kBFloat16 : at::kFloat, adapters_);
    const int64_t vocab = dec.vocab();

    // Prompt lengths 1..13: every row at its own position, some with nothing prefilled.
    Batch batch;
    std::mt19937 rng(unsigned(rows * 31 + lora));
    for (size_t b = 0; b < n; ++b) {
      std::vector<int64_t> p(1 + (b * 5 + 3) % 13);
      for (auto& id : p) id = int64_t(rng() % uint32_t(vocab));
      batch.prompts.push_back(p);
      batch.adapters.push_back(lora ? int(b % 3) - 1 : -1);  // none, a, b, none, ...
    }
    std::vector<std::vector<int64_t>> fed;
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    const Logits fused = dec.run(batch, 0, n, steps, true, &fed);
    QCOMPARE(dec.times.crewLoops, uint64_t(0));
    at::set_num_threads(threads);
    const Logits opByOp = dec.run(batch, 0, n, steps, false, &fed);
    at::set_num_threads(3);
    // One group on 3 threads: products worth a second thread split over the step crew (from
    // B = 20 here: the LM head's 512 rows, from 37 gate and up too), each output computed as
    // on one thread, bit for bit. Past the 64 rows whose LM head the step computes, the head is
    // libtorch's, whose sums may depend on the thread count (OpenBLAS's AVX2 sgemm does): there
    // the logits agree to fp32's summation-order tolerance.
    const Logits crewLoops = dec.run(batch, 0, n, steps, true, &fed);
    if (rows >= 20) QVERIFY(dec.times.crewLoops >= uint64_t(steps));
    if (n <= 64)
      QCOMPARE(maxAbsDiff(fused, crewLoops), 0.0);
    else
      QVERIFY2(maxAbsDiff(fused, crewLoops) <= 5e-5, qPrintable(QString::number(maxAbsDiff(fused, crewLoops))));
    const Logits split = dec.run(batch, 0, n, steps, true, &fed, 3);
    at::set_num_threads(threads);
    QCOMPARE(dec.times.steps, uint64_t(steps));
    QCOMPARE(dec.times.groups, uint64_t(steps) * std::min<uint64_t>(3, n));  // the rows really ran in groups
    // and each group its rows' LM head, up to the 64 rows logits() runs through our kernels
    // (beyond, at::linear or, in bf16 without AVX512-BF16, our kernels through project(): the
    // step leaves it to logits(), timed all the same)
    QCOMPARE(dec.times.headRows, n <= 64 && model::vectorRowsAvailable(bf16) ? uint64_t(steps) * n : 0);
    QVERIFY(dec.times.lmHead > 0);
    // The LM head inside the step computes what logits() computes on the step's hidden rows:
    // the same kernel on the same rows, bit for bit.
    std::vector<std::vector<int64_t>> fedTwice = fed;
    const Logits twoCalls = dec.run(batch, 0, n, steps, true, &fedTwice, 1, false);
    QCOMPARE(dec.times.headRows, uint64_t(0));
    QCOMPARE(maxAbsDiff(fused, twoCalls), 0.0);
    Logits alone(size_t(steps), std::vector<float>(n * size_t(vocab)));
    for (size_t b = 0; b < n; ++b) {
      const Logits one = dec.run(batch, b, 1, steps, true, &fed);
      for (int s = 0; s < steps; ++s) std::copy(one[size_t(s)].begin(), one[size_t(s)].end(), alone[size_t(s)].begin() + long(b * size_t(vocab)));
    }

    // The reference: each row's whole sequence (prompt + fed tokens) in one causal pass, one
    // call per adapter; decode step s of row b is the sequence's position len(prompt) - 1 + s.
    Logits reference(size_t(steps), std::vector<float>(n * size_t(vocab)));
    for (int a = -1; a < (lora ? 2 : 0); ++a) {
      std::vector<std::vector<int64_t>> seqs;
      std::vector<size_t> which;
      for (size_t b = 0; b < n; ++b) {
        if (batch.adapters[b] != a) continue;
        std::vector<int64_t> s = batch.prompts[b];
        s.insert(s.end(), fed[b].begin(), fed[b].end() - 1);
        seqs.push_back(s);
        which.push_back(b);
      }
      if (seqs.empty()) continue;
      const QString out = tmp_.filePath(QString("ref-%1-%2-%3.f32").arg(dtype).arg(rows).arg(a));
      QStringList args = {QString::fromStdString(dir_), seqsJson(seqs), "--logits", out, "--dtype", dtype};
      if (a >= 0) args << "--adapter" << QString::fromStdString(adapters_[size_t(a)]);
      runReference(args);
      const std::vector<float> all = readFloats(out);
      size_t at = 0;
      for (size_t i = 0; i < seqs.size(); ++i) {
        const size_t b = which[i], start = batch.prompts[b].size() - 1;
        QVERIFY(all.size() >= (at + seqs[i].size()) * size_t(vocab));
        for (int s = 0; s < steps; ++s) {
          const float* src = all.data() + (at + start + size_t(s)) * size_t(vocab);
          std::copy(src, src + vocab, reference[size_t(s)].begin() + long(b * size_t(vocab)));
        }
        at += seqs[i].size();
      }
    }

    const double scale = maxAbs(reference);
    const double dOps = maxAbsDiff(fused, opByOp), dAlone = maxAbsDiff(fused, alone), dRef = maxAbsDiff(fused, reference);
    const double dSplit = maxAbsDiff(fused, split);
    // fp32: summation order only (see test_llama_reference: fused vs op-by-op 5e-5, vs the
    // reference 1e-4). bf16: a different summation order flips a bf16 rounding now and then and
    // each flip propagates: the 4% of max |logit| budget of the bf16 reference tests.
    const double tol = bf16 ? 0.04 * scale : 5e-5, tolRef = bf16 ? 0.04 * scale : 1e-4;
    qInfo("%s B=%d%s: max |logit| %.2f; fused batch vs op-by-op %.3g, vs each row alone %.3g, vs rows split in 3 "
          "groups %.3g, vs PyTorch %.3g (tolerance %.3g / %.3g)",
          qPrintable(dtype), rows, lora ? " mixed LoRA" : "", scale, dOps, dAlone, dSplit, dRef, tol, tolRef);
    QVERIFY2(dOps <= tol, qPrintable(QString::number(dOps)));
    QVERIFY2(dSplit <= tol, qPrintable(QString::number(dSplit)));
    QVERIFY2(dAlone <= tol, qPrintable(QString::number(dAlone)));
    QVERIFY2(dRef <= tolRef, qPrintable(QString::number(dRef)));

    // Greedy ids: the batch's own choices equal op-by-op's, each row's alone and the
    // reference's. In bf16 two correct implementations may pick differently at a near tie:
    // there a different choice must be within the tolerance of the other side's best logit.
    int checked = 0, nearTies = 0;
    const auto sameChoice = [&](const Logits& other, int s, size_t b, int64_t want) {
      const float* l = other[size_t(s)].data() + b * size_t(vocab);
      const int64_t theirs = argmax(l, vocab);
      if (theirs == want) return true;
      ++nearTies;
      qInfo("step %d row %zu: %lld vs %lld, logits %.4f vs %.4f", s, b, (long long)want, (long long)theirs, l[want], l[theirs]);
      return bf16 && l[theirs] - l[want] <= tol;
    };
    for (int s = 0; s < steps; ++s)
      for (size_t b = 0; b < n; ++b) {
        const int64_t want = fed[b][size_t(s)];
        QVERIFY(sameChoice(opByOp, s, b, want));
        QVERIFY(sameChoice(alone, s, b, want));
        QVERIFY(sameChoice(split, s, b, want));
        QVERIFY(sameChoice(reference, s, b, want));
        ++checked;
      }
    QCOMPARE(checked, steps * rows);
    if (bf16) qInfo("bf16: %d of %d choices differ from one of the three others at a near tie", nearTies, checked);
    if (lora) {  // the adapters really act: rows with one differ from the same model without
      Batch plain = batch;
      std::fill(plain.adapters.begin(), plain.adapters.end(), -1);
      std::vector<std::vector<int64_t>> fedPlain = fed;
      const Logits base = dec.run(plain, 0, n, steps, true, &fedPlain);
      QVERIFY(maxAbsDiff(base, fused) > 1e-2);
    }
  }

  // The op-by-op path's runtime LoRA terms (BatchLoraDelta::delta: prefill, and decode steps
  // the fused step does not take) against each product computed in double and rounded where
  // at::matmul's result is stored: round(round(x Aᵀ) Bᵀ) in bf16 (where the CPU lacks
  // AVX512-BF16, through our row kernels and the fused step's expand), x Aᵀ Bᵀ in fp32. Every
  // adapted projection of two layers, 1-7 batch rows of 1 or 5 positions, one adapter for all
  // rows (no gather) and a mix with rows of none (exactly zero there).
  void loraDeltaRoundsAsTheMatmuls_data() {
    QTest::addColumn<QString>("dtype");
    QTest::newRow("f32") << "f32";
    QTest::newRow("bf16") << "bf16";
  }
  void loraDeltaRoundsAsTheMatmuls() {
    QFETCH(QString, dtype);
    const bool bf16 = dtype == "bf16";
    const at::ScalarType st = bf16 ? at::kBFloat16 : at::kFloat;
    c10::InferenceMode guard;
    model::LlamaModel m = model::LlamaModel::load(dir_, st, at::kCPU);
    std::vector<infer::LoraAdapter> adapters;
    for (size_t i = 0; i < adapters_.size(); ++i)
      adapters.push_back(infer::loadLoraAdapter("a" + std::to_string(i), adapters_[i], m));
    const auto round = [&](double v) { return bf16 ? double(at::BFloat16(float(v))) : double(float(v)); };
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    int64_t values = 0, exact = 0, zeros = 0;
    double worst = 0;  // |d - reference| / its bound
    for (const std::vector<int>& rowAdapter : std::vector<std::vector<int>>{{1}, {0, 0, 0, 0}, {-1, 0, 1, -1, 1, 0, 0}})
      for (int64_t T : {1, 5}) {
        const int64_t B = int64_t(rowAdapter.size());
        const infer::BatchLoraDelta delta(adapters, rowAdapter, at::kCPU);
        for (size_t layer : {size_t(0), size_t(1)})
          for (int pi = 0; pi < 7; ++pi) {
            const auto p = model::Proj(pi);
            const int64_t in = p == model::Proj::Down ? spec_.intermediate : spec_.hidden;  // O reads heads·hd = hidden
            std::vector<float> xv(size_t(B * T * in));
            for (auto& v : xv) v = float(round(normal(rng)));
            const at::Tensor x = at::tensor(xv).view({B, T, in}).to(st);
            const at::Tensor d = delta.delta(layer, p, x);
            QVERIFY(d.defined());
            QCOMPARE(d.scalar_type(), st);
            const at::Tensor df = d.to(at::kFloat).contiguous();
            const int64_t out = df.size(2);
            QCOMPARE(df.sizes().vec(), (std::vector<int64_t>{B, T, out}));
            const float* dp = df.data_ptr<float>();
            for (int64_t b = 0; b < B; ++b) {
              const int a = rowAdapter[size_t(b)];
              if (a < 0) {
                for (int64_t i = 0; i < T * out; ++i) QCOMPARE(dp[b * T * out + i], 0.0f);
                zeros += T * out;
                continue;
              }
              const infer::LoraModule& mod = adapters[size_t(a)].layers[layer][size_t(pi)];
              QVERIFY(mod.a.defined());
              const at::Tensor af = mod.a.to(at::kFloat).contiguous(), bf = mod.b.to(at::kFloat).contiguous();
              const int64_t r = af.size(0);
              const float *ap = af.data_ptr<float>(), *bp = bf.data_ptr<float>();
              for (int64_t t = 0; t < T; ++t) {
                const float* xr = xv.data() + (b * T + t) * in;
                std::vector<double> mid(static_cast<size_t>(r));
                for (int64_t i = 0; i < r; ++i) {
                  double sum = 0;
                  for (int64_t j = 0; j < in; ++j) sum += double(xr[j]) * double(ap[i * in + j]);
                  mid[size_t(i)] = round(sum);
                }
                for (int64_t o = 0; o < out; ++o) {
                  double sum = 0, mass = 0;
                  for (int64_t i = 0; i < r; ++i) {
                    sum += mid[size_t(i)] * double(bp[o * r + i]);
                    mass += std::fabs(mid[size_t(i)] * double(bp[o * r + i]));
                  }
                  const double want = round(sum), got = dp[(b * T + t) * out + o];
                  // a flip of the final rounding (one bf16 step: 2^-7 relative), and of some of
                  // the shrink's (2^-8 of each term); fp32: summation order
                  const double bound = bf16 ? std::ldexp(std::fabs(want), -7) + std::ldexp(mass, -8) : 1e-5 * mass + 1e-30;
                  worst = std::max(worst, std::fabs(got - want) / bound);
                  exact += got == want;
                  ++values;
                }
              }
            }
          }
      }
    qInfo("%s: %lld of %lld adapted values as the double-precision reference rounds them, the rest within %.3g of "
          "their bound; %lld values of rows without an adapter zero",
          qPrintable(dtype), (long long)exact, (long long)values, worst, (long long)zeros);
    QVERIFY2(worst <= 1.0, qPrintable(QString::number(worst)));
    if (bf16)  // a flip is rare: sums in fp32 land within a rounding step's edge now and then
      QVERIFY2(double(exact) >= 0.97 * double(values), qPrintable(QString("%1 of %2").arg(exact).arg(values)));
    QVERIFY(zeros > 0);
  }

  // An adapter whose tensors have rank 0 (A [0, in], B [out, 0]: shapes that fit the model) is
  // refused when it loads, naming the module, instead of dividing by its rank in a request.
  void zeroRankAdapterIsRefused() {
    c10::InferenceMode guard;
    const std::string dir = tmp_.filePath("lora-r0").toStdString();
    crosslab::testing::writeTinyLora(dir, spec_, 4, 8.0, false, 5);  // a valid config (r = 4)
    const std::string p = "base_model.model.model.layers.0.self_attn.q_proj";
    const float none = 0;
    model::writeSafetensors(std::filesystem::path(dir) / "adapter_model.safetensors",
                            {{p + ".lora_A.weight", model::DType::F32, {0, spec_.hidden}, &none, 0},
                             {p + ".lora_B.weight", model::DType::F32, {spec_.hidden, 0}, &none, 0}});
    model::LlamaModel m = model::LlamaModel::load(dir_, at::kBFloat16, at::kCPU);
    try {
      infer::loadLoraAdapter("r0", dir, m);
      QFAIL("a rank-0 adapter loaded");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("model.layers.0.self_attn.q_proj' have rank 0"), e.what());
    }
  }

  // A cache row that is full is refused before anything is written, as op by op.
  void fullCacheRowIsRefused() {
    c10::InferenceMode guard;
    model::LlamaModel m = model::LlamaModel::load(dir_, at::kFloat, at::kCPU);
    model::KvCache cache = m.makeCache(3, 4);
    cache.lengths = {1, 4, 0};
    const at::Tensor before = cache.keys[0].clone();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, m.hidden(at::tensor(std::vector<int64_t>{5, 6, 7}, at::kLong).view({3, 1}), &cache));
    QCOMPARE(cache.lengths, (std::vector<int64_t>{1, 4, 0}));
    QVERIFY(at::equal(before, cache.keys[0]));
  }

  // Where the scores run the AVX2 loops (held to them here on any CPU with AVX2), the cache keeps
  // its keys in blocks too (KvCache::keyBlocks) and the fused step scores from there: the same
  // logits, bit for bit, as the step that transposes the cached keys at every call — after a
  // row is cut back and its cut positions written anew op by op (setLength), after a row is
  // replaced by a new prompt (replaceRow), where blocks left from the old keys would change the
  // scores, with the rows split into three groups, and up to a capacity that is not a multiple
  // of eight.
  void keyBlocksGiveTheSameSteps_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addRow("f32") << "f32";
    QTest::addRow("bf16") << "bf16";
  }
  void keyBlocksGiveTheSameSteps() {
    QFETCH(QString, dtype);
    if (!__builtin_cpu_supports("avx2")) QSKIP("the key blocks serve the AVX2 score loops");
    const model::detail::CappedKernels capped(model::detail::KernelCap::NoAvx512);
    c10::InferenceMode guard;
    model::LlamaModel m = model::LlamaModel::load(dir_, dtype == "bf16" ? at::kBFloat16 : at::kFloat, at::kCPU);
    const int64_t B = 3, capacity = 28, vocab = m.config().vocabSize;
    model::KvCache blocks = m.makeCache(B, capacity), plain = m.makeCache(B, capacity);
    QVERIFY(blocks.hasKeyBlocks());
    plain.keyBlocks.clear();
    plain.blocked = at::Tensor();
    std::mt19937 rng(5);
    const auto tokens = [&](size_t n) {
      std::vector<int64_t> ids(n);
      for (auto& id : ids) id = int64_t(rng() % uint32_t(vocab));
      return ids;
    };
    int compared = 0;
    const auto steps = [&](int count) {
      for (int s = 0; s < count; ++s) {
        const at::Tensor input = at::tensor(tokens(size_t(B)), at::kLong).view({B, 1});
        QVERIFY(m.fusedDecodeApplies(input, &blocks) && m.fusedDecodeApplies(input, &plain));
        const at::Tensor a = m.forward(input, &blocks).contiguous(), b = m.forward(input, &plain).contiguous();
        QVERIFY2(std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), sizeof(float) * size_t(a.numel())) == 0,
                 qPrintable(QString("step %1").arg(compared)));
        ++compared;
      }
      for (int64_t r = 0; r < B; ++r) QCOMPARE(blocks.blocked[r].item<int64_t>(), blocks.lengths[size_t(r)]);
    };
    steps(11);  // from empty rows past a block of eight
    // Row 1 cut back to 4 positions, then 3 of them written anew; row 2 replaced by a 9-token
    // prompt (both op by op).
    const std::vector<int64_t> rewrite = tokens(3), prompt = tokens(9);
    for (model::KvCache* c : {&blocks, &plain}) {
      c->setLength(1, 4);
      model::KvCache one = rowView(*c, 1);
      m.hidden(at::tensor(rewrite, at::kLong).unsqueeze(0), &one);
      c->setLength(1, one.lengths[0]);
      c->replaceRow(2, 0);
      model::KvCache two = rowView(*c, 2);
      m.hidden(at::tensor(prompt, at::kLong).unsqueeze(0), &two);
      c->setLength(2, two.lengths[0]);
    }
    QCOMPARE(blocks.blocked[1].item<int64_t>(), int64_t(4));
    QCOMPARE(blocks.blocked[2].item<int64_t>(), int64_t(0));
    const int threads = at::get_num_threads();
    at::set_num_threads(3);
    m.setDecodeSplit(3);  // a group a row
    steps(13);
    m.setDecodeSplit(1);
    at::set_num_threads(threads);
    steps(4);  // row 0 up to the capacity, 28
    QCOMPARE(blocks.lengths[0], capacity);
    QCOMPARE(compared, 28);
  }

  // The fused step writes its logits into the buffer of the step before once the caller has let
  // go of those (a server's 16 MB a step at 32 rows of a 128k vocabulary, page-faulted in anew
  // when allocated each step), never into logits the caller still holds.
  void stepLogitsReuseOnlyAReleasedBuffer() {
    std::optional<c10::InferenceMode> guard(std::in_place);
    model::LlamaModel m = model::LlamaModel::load(dir_, at::kFloat, at::kCPU);
    model::DecodeTimes times;
    m.setDecodeTimes(&times);
    const int64_t n = 5, vocab = m.config().vocabSize;
    const auto input = [&](int s) {
      std::vector<int64_t> ids(static_cast<size_t>(n));
      for (int64_t b = 0; b < n; ++b) ids[size_t(b)] = (s * 7 + b * 13) % vocab;
      return at::tensor(ids, at::kLong).view({n, 1});
    };
    // Two caches fed the same tokens: first every step's logits kept, then each step's only
    // until the next step.
    model::KvCache held = m.makeCache(n, 16), released = m.makeCache(n, 16);
    std::vector<at::Tensor> kept, copies;
    for (int s = 0; s < 6; ++s) {
      kept.push_back(m.forward(input(s), &held));
      if (times.headRows == 0) QSKIP("the fused step does not run the LM head on this CPU");
      copies.push_back(kept.back().clone());
      for (size_t i = 0; i + 1 < kept.size(); ++i) QVERIFY(kept[i].data_ptr() != kept.back().data_ptr());
    }
    const void* first = nullptr;
    for (int s = 0; s < 6; ++s) {
      at::Tensor step = m.forward(input(s), &released);
      QCOMPARE(step.sizes(), (at::IntArrayRef{n, 1, vocab}));
      QVERIFY2(at::equal(step, copies[size_t(s)]), qPrintable(QString::number(s)));
      if (s == 0) first = step.data_ptr();
      QCOMPARE(step.data_ptr(), first);  // the same buffer each step, once released
      for (const at::Tensor& k : kept) QVERIFY(k.data_ptr() != first);
    }
    // Outside InferenceMode (no grad) the buffer made under it is an ordinary tensor, whose
    // logits the caller may change in place.
    guard.reset();
    at::NoGradGuard noGrad;
    at::Tensor step = m.forward(input(6), &released);
    QCOMPARE(step.data_ptr(), first);
    step.mul_(2.0f);
    QCOMPARE(times.headRows, uint64_t(13 * n));  // every step's logits from the step itself
    for (size_t i = 0; i < kept.size(); ++i) QVERIFY2(at::equal(kept[i], copies[i]), qPrintable(QString::number(i)));
  }
};

QTEST_GUILESS_MAIN(TestBatchedDecode)
#include "test_batched_decode.moc"
