// The continuous-batching scheduler on a tiny checkpoint: batched greedy decode (with
// batched, chunked, padded prefill and sequences joining and leaving mid-batch) gives the
// single-sequence engine's tokens and the PyTorch reference's (tests/model/ref_llama.py), on
// the fused decode step, the op-by-op path and the measured choice between them; runtime LoRA
// per row gives the merged adapter's tokens in one mixed batch; a long prompt is prefilled in
// chunks while running streams keep getting a token every step; seeds reproduce; stop
// strings, stop ids, min_tokens and cancel behave.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "core/infer/batch_scheduler.h"
#include "core/infer/local_engine.h"
#include "core/model/cpu_attention.h"
#include "core/model/cpu_matmul.h"
#include "tests/model/tiny_llama.h"
#include "tests/serve/serve_fixture.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;

namespace {

// Collects the results of submitted requests and waits for all of them.
class Collector {
 public:
  infer::ServeRequest wrap(infer::ServeRequest r, size_t slot) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (results_.size() <= slot) results_.resize(slot + 1);
      if (streamed_.size() <= slot) streamed_.resize(slot + 1);
      ++pending_;
    }
    r.onToken = [this, slot](int32_t, const std::string& text) {
      std::lock_guard<std::mutex> lk(mu_);
      streamed_[slot] += text;
      return true;
    };
    r.onDone = [this, slot](const infer::ServeResult& res) {
      std::lock_guard<std::mutex> lk(mu_);
      results_[slot] = res;
      --pending_;
      cv_.notify_all();
    };
    return r;
  }
  bool wait() {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, std::chrono::minutes(2), [&] { return pending_ == 0; });
  }
  const infer::ServeResult& result(size_t i) const { return results_[i]; }
  const std::string& streamed(size_t i) const { return streamed_[i]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<infer::ServeResult> results_;
  std::vector<std::string> streamed_;
  int pending_ = 0;
};

std::vector<int32_t> promptOf(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(5 + (i * 37 + salt * 101) % 500);
  return p;
}

infer::ServeRequest greedy(std::vector<int32_t> prompt, int maxTokens, const std::string& adapter = {}) {
  infer::ServeRequest r;
  r.prompt = std::move(prompt);
  r.maxTokens = maxTokens;
  r.ignoreEos = true;
  r.adapter = adapter;
  return r;
}

// The reference's greedy continuations of `prompts` (one call; each computed on its own).
std::vector<std::vector<int32_t>> referenceGreedy(const std::string& dir, const std::vector<std::vector<int32_t>>& prompts,
                                                  int n, const std::string& adapter = {}) {
  QJsonArray all;
  for (const auto& p : prompts) {
    QJsonArray a;
    for (int32_t id : p) a.append(id);
    all.append(a);
  }
  QStringList args = {REF_LLAMA_PY, QString::fromStdString(dir), QString::fromUtf8(QJsonDocument(all).toJson(QJsonDocument::Compact)),
                      "--greedy", QString::number(n)};
  if (!adapter.empty()) args << "--adapter" << QString::fromStdString(adapter);
  const auto run = testing::runProgram(PYTHON3, args);
  if (run.code != 0) {
    qWarning() << run.err;
    return {};
  }
  std::vector<std::vector<int32_t>> out;
  for (const auto r : QJsonDocument::fromJson(run.out).object().value("batch").toArray()) {
    out.emplace_back();
    for (const auto id : r.toObject().value("ids").toArray()) out.back().push_back(int32_t(id.toInt()));
  }
  return out;
}

std::vector<int32_t> prefix(const std::vector<int32_t>& v, size_t n) { return {v.begin(), v.begin() + long(std::min(n, v.size()))}; }

std::vector<int32_t> singleSequence(const std::string& dir, const std::vector<int32_t>& prompt, int n,
                                    const std::string& mergedAdapter = {}) {
  infer::EngineOptions eo;
  eo.adapter = mergedAdapter;
  auto engine = infer::LocalEngine::open(dir, eo);
  infer::GenerateOptions go;
  go.maxTokens = n;
  go.ignoreEos = true;
  return engine->generate(prompt, go).ids;
}

}  // namespace

class TestBatchScheduler : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    testing::writeServeFixture(dir_);
  }

  // Six prompts of different lengths and output lengths, handed over at once, with a batch of
  // 4 so later ones join as earlier ones leave; prefill batches of 1 and 4 (4: one padded
  // forward, 12 prompt tokens a step shared between the rows, 3 each), on each decode path.
  // Prefill chunks through one forward each, or (stepwise 8) those of up to 8 positions per
  // row as fused steps, one position at a time.
  void batchedGreedyEqualsSingleSequence_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<int>("prefillBatch");
    QTest::addColumn<int>("stepwise");
    QTest::addColumn<bool>("avx2");
    for (const char* path : {"fused", "op-by-op", "auto"})
      for (int pb : {1, 4})
        for (int stepwise : {0, 8})
          QTest::addRow("%s, prefill batch %d, stepwise %d", path, pb, stepwise) << path << pb << stepwise << false;
    // The kernels held to the AVX2 loops, so that on any CPU with AVX2 the fused steps score
    // from the cache's key blocks (KvCache::keyBlocks) through the scheduler's row moves,
    // admissions into reused rows and padding cuts after stepwise chunks.
    for (int stepwise : {0, 8})
      QTest::addRow("fused, prefill batch 4, stepwise %d, AVX2 loops", stepwise) << "fused" << 4 << stepwise << true;
  }

  void batchedGreedyEqualsSingleSequence() {
    QFETCH(QString, path);
    QFETCH(int, prefillBatch);
    QFETCH(int, stepwise);
    QFETCH(bool, avx2);
    if (avx2 && !__builtin_cpu_supports("avx2")) QSKIP("no AVX2");
    std::optional<model::detail::CappedKernels> capped;
    if (avx2) capped.emplace(model::detail::KernelCap::NoAvx512);
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.prefillChunk = 12;
    so.prefillBatch = prefillBatch;
    so.stepwisePrefill = stepwise;
    so.maxModelLen = 256;
    so.decodePath = path.toStdString();
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    const int lens[] = {3, 17, 9, 1, 23, 12}, outs[] = {20, 9, 31, 14, 6, 25};
    engine->holdForTesting(true);
    for (size_t i = 0; i < 6; ++i) engine->submit(c.wrap(greedy(promptOf(lens[i], int(i)), outs[i]), i));
    engine->holdForTesting(false);
    QVERIFY(c.wait());
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < 6; ++i) prompts.push_back(promptOf(lens[i], int(i)));
    const auto reference = referenceGreedy(dir_, prompts, 31);
    QCOMPARE(reference.size(), size_t(6));
    for (size_t i = 0; i < 6; ++i) {
      const auto want = singleSequence(dir_, prompts[i], outs[i]);
      QCOMPARE(c.result(i).finishReason, std::string("length"));
      QCOMPARE(c.result(i).ids, want);
      QCOMPARE(c.result(i).ids, prefix(reference[i], size_t(outs[i])));
    }
    const infer::SchedulerStats st = engine->stats();
    QCOMPARE(st.maxBatchSeen, 4);  // four decoding at once, more never
    QCOMPARE(st.maxPrefillBatchSeen, prefillBatch);
    if (path == "fused") QCOMPARE(st.opByOpSteps, uint64_t(0));
    if (path == "op-by-op") QCOMPARE(st.fusedSteps, uint64_t(0));
    // Chunks of up to 12 positions (3 each while four prompts share a step): those of 8 or
    // fewer through fused steps when asked for, unless the decode path is op-by-op.
    QCOMPARE(st.fusedPrefillSteps > 0, stepwise > 0 && path != "op-by-op");
    QVERIFY(st.fusedPrefillSteps < st.prefillSteps);  // a 12-position chunk is one forward
    if (path == "auto") QVERIFY(st.fusedSteps > 0 && st.opByOpSteps > 0);  // both measured
    QCOMPARE(st.steps, st.fusedSteps + st.opByOpSteps);
    if (avx2) QVERIFY(model::keyBlocksHelp());
  }

  // Requests that end at their first token are prefilled and never decoded: stepwise prefill's
  // fused steps are prefill time, not the decode steps' phases.
  void stepwisePrefillIsNotTimedAsDecode() {
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.maxModelLen = 256;
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    engine->holdForTesting(true);
    for (size_t i = 0; i < 6; ++i) engine->submit(c.wrap(greedy(promptOf(int(3 + 4 * i), int(i)), 1), i));
    engine->holdForTesting(false);
    QVERIFY(c.wait());
    for (size_t i = 0; i < 6; ++i) QCOMPARE(c.result(i).ids.size(), size_t(1));
    const infer::SchedulerStats st = engine->stats();
    QVERIFY(st.fusedPrefillSteps > 0);
    QCOMPARE(st.fusedPrefillSteps, st.prefillSteps);
    QCOMPARE(st.steps, uint64_t(0));
    QCOMPARE(st.fusedMatmulS, 0.0);
    QCOMPARE(st.fusedAttentionS, 0.0);
    QVERIFY(st.prefillS > 0);
  }

  // With the default options, a burst of sixteen short prompts is prefilled in one step (each
  // prefill step reads every weight once; the default used to take four at a time, in four).
  void aBurstOfShortPromptsIsPrefilledTogether() {
    infer::SchedulerOptions so;
    so.maxBatch = 16;
    so.maxModelLen = 64;
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    engine->holdForTesting(true);
    for (size_t i = 0; i < 16; ++i) engine->submit(c.wrap(greedy(promptOf(5, int(i)), 3), i));
    engine->holdForTesting(false);
    QVERIFY(c.wait());
    for (size_t i = 0; i < 16; ++i) QCOMPARE(c.result(i).ids, singleSequence(dir_, promptOf(5, int(i)), 3));
    const infer::SchedulerStats st = engine->stats();
    QCOMPARE(st.maxPrefillBatchSeen, 16);
    QCOMPARE(st.prefillSteps, uint64_t(1));  // 16 x 5 positions within the default chunk of 128
    QCOMPARE(st.maxBatchSeen, 16);
  }

  // One mixed batch: rows with adapter a, adapter b and none, against each adapter merged and
  // the reference's unmerged LoRA, on each decode path.
  void runtimeLoraEqualsMerged_data() {
    QTest::addColumn<QString>("path");
    for (const char* path : {"fused", "op-by-op", "auto"}) QTest::addRow("%s", path) << path;
  }

  void runtimeLoraEqualsMerged() {
    QFETCH(QString, path);
    infer::SchedulerOptions so;
    so.maxBatch = 8;
    so.maxModelLen = 128;
    so.decodePath = path.toStdString();
    so.loras = {{"a", dir_ + "/lora_a"}, {"b", dir_ + "/lora_b"}};
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    const std::vector<std::string> adapters = {"a", "", "b", "a", "b", ""};
    engine->holdForTesting(true);
    for (size_t i = 0; i < adapters.size(); ++i)
      engine->submit(c.wrap(greedy(promptOf(6 + int(i), int(i)), 16, adapters[i]), i));
    engine->holdForTesting(false);
    QVERIFY(c.wait());
    for (const std::string adapter : {"", "a", "b"}) {
      std::vector<std::vector<int32_t>> prompts;
      std::vector<size_t> rows;
      for (size_t i = 0; i < adapters.size(); ++i)
        if (adapters[i] == adapter) {
          prompts.push_back(promptOf(6 + int(i), int(i)));
          rows.push_back(i);
        }
      const std::string dir = adapter.empty() ? "" : dir_ + "/lora_" + adapter;
      const auto reference = referenceGreedy(dir_, prompts, 16, dir);
      QCOMPARE(reference.size(), rows.size());
      for (size_t j = 0; j < rows.size(); ++j) {
        QCOMPARE(c.result(rows[j]).ids, singleSequence(dir_, prompts[j], 16, dir));
        QCOMPARE(c.result(rows[j]).ids, reference[j]);
      }
    }
    QCOMPARE(engine->stats().maxBatchSeen, 6);
    // The adapters change the output at all (otherwise the comparison proves nothing).
    QVERIFY(singleSequence(dir_, promptOf(6, 0), 16, dir_ + "/lora_a") != singleSequence(dir_, promptOf(6, 0), 16));
  }

  // A long prompt arriving while a stream decodes is prefilled 16 tokens a step, and every
  // one of those steps also decodes the running stream: it gets a token per step throughout.
  void longPromptIsChunkedWhileStreamsDecode() {
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.prefillChunk = 16;
    so.maxModelLen = 512;
    auto engine = infer::BatchScheduler::open(dir_, so);
    std::mutex mu;
    std::vector<char> events;  // 'a': a token of the running stream, 'B': the long prompt's first token
    Collector c;
    infer::ServeRequest a = c.wrap(greedy(promptOf(4, 1), 60), 0);
    infer::ServeRequest b = c.wrap(greedy(promptOf(200, 2), 4), 1);
    bool submitted = false;
    const auto aToken = a.onToken;
    a.onToken = [&](int32_t id, const std::string& text) {
      {
        std::lock_guard<std::mutex> lk(mu);
        events.push_back('a');
        if (events.size() == 2 && !submitted) {  // from the scheduler thread: joins at the next step
          submitted = true;
          engine->submit(b);
          events.push_back('+');
        }
      }
      return aToken(id, text);
    };
    const auto bToken = b.onToken;
    b.onToken = [&](int32_t id, const std::string& text) {
      {
        std::lock_guard<std::mutex> lk(mu);
        events.push_back('B');
      }
      return bToken(id, text);
    };
    engine->submit(a);
    QVERIFY(c.wait());
    const std::string log(events.begin(), events.end());
    const size_t plus = log.find('+'), first = log.find('B');
    QVERIFY2(plus != std::string::npos && first != std::string::npos && first > plus, log.c_str());
    const auto during = std::count(log.begin() + long(plus), log.begin() + long(first), 'a');
    qInfo("running stream's tokens while the 200-token prompt was prefilled (13 chunks of 16): %ld", long(during));
    QVERIFY2(during >= 12, log.c_str());
    QCOMPARE(c.result(1).ids, singleSequence(dir_, promptOf(200, 2), 4));
    QCOMPARE(c.result(0).ids, singleSequence(dir_, promptOf(4, 1), 60));
  }

  // A request alone in the batch decodes through the fused batch-1 CPU step (LlamaModel::
  // canDecodeStepCpu), its adapter applied from the LoRA factors: same ids as merged.
  void singleRuntimeLoraRequestEqualsMerged() {
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.maxModelLen = 128;
    so.loras = {{"a", dir_ + "/lora_a"}, {"b", dir_ + "/lora_b"}};
    auto engine = infer::BatchScheduler::open(dir_, so);
    for (const std::string adapter : {"a", "b"}) {
      Collector c;
      engine->submit(c.wrap(greedy(promptOf(9, 3), 24, adapter), 0));
      QVERIFY(c.wait());
      QCOMPARE(c.result(0).ids, singleSequence(dir_, promptOf(9, 3), 24, dir_ + "/lora_" + adapter));
    }
    QCOMPARE(engine->stats().maxBatchSeen, 1);
  }

  void seedsReproduce() {
    infer::SchedulerOptions so;
    so.maxModelLen = 128;
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    for (size_t i = 0; i < 3; ++i) {
      infer::ServeRequest r = greedy(promptOf(5, 1), 24);
      r.sampling.temperature = 1.0;
      r.sampling.topP = 0.95;
      r.sampling.seed = i < 2 ? 42 : 43;
      engine->submit(c.wrap(r, i));
    }
    QVERIFY(c.wait());
    QCOMPARE(c.result(0).ids, c.result(1).ids);
    QVERIFY(c.result(0).ids != c.result(2).ids);
  }

  // A 70 000-token vocabulary: a batch's rows are sampled in parallel over the step crew (two
  // threads; each row is 280 KB of logits), then accepted in order. Greedy rows give what one
  // sequence alone gives; seeded sampling rows (one with min_tokens masking its stop id) give
  // what the same request gives alone, where its one row is sampled on the calling thread.
  void aLargeVocabularyIsSampledInParallel() {
    QTemporaryDir big;
    QVERIFY(big.isValid());
    const std::string dir = big.path().toStdString();
    testing::TinyLlamaSpec spec;
    spec.hidden = 32;
    spec.intermediate = 48;
    spec.layers = 1;
    spec.heads = 2;
    spec.kvHeads = 1;
    spec.vocab = 70000;
    testing::writeTinyLlama(dir, spec);
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.maxModelLen = 64;
    so.threads = 2;
    const auto sampled = [](int salt, uint64_t seed) {
      infer::ServeRequest r = greedy(promptOf(4, salt), 12);
      r.sampling.temperature = 1.0;
      r.sampling.seed = seed;
      return r;
    };
    std::vector<infer::ServeRequest> requests = {greedy(promptOf(5, 1), 12), sampled(2, 7), greedy(promptOf(3, 3), 12),
                                                 sampled(4, 8)};
    auto engine = infer::BatchScheduler::open(dir, so);
    {  // a stop id this request draws when nothing masks it, masked (-inf) in its row for all 12 tokens
      Collector free;
      engine->submit(free.wrap(requests[3], 0));
      QVERIFY(free.wait());
      requests[3].stopIds = {free.result(0).ids.at(2)};
      requests[3].minTokens = 12;
    }
    std::vector<infer::ServeResult> alone;
    for (size_t i = 0; i < requests.size(); ++i) {  // each request alone: one row, sampled on this thread
      Collector one;
      engine->submit(one.wrap(requests[i], 0));
      QVERIFY(one.wait());
      alone.push_back(one.result(0));
      QCOMPARE(alone.back().ids.size(), size_t(12));
    }
    Collector c;
    engine->holdForTesting(true);
    for (size_t i = 0; i < requests.size(); ++i) engine->submit(c.wrap(requests[i], i));
    engine->holdForTesting(false);
    QVERIFY(c.wait());
    QCOMPARE(engine->stats().maxBatchSeen, 4);
    for (size_t i = 0; i < requests.size(); ++i)
      QVERIFY2(c.result(i).ids == alone[i].ids, qPrintable(QString("request %1").arg(i)));
    QCOMPARE(c.result(0).ids, singleSequence(dir, requests[0].prompt, 12));
    QCOMPARE(c.result(2).ids, singleSequence(dir, requests[2].prompt, 12));
    QVERIFY(c.result(1).ids != c.result(3).ids);
    QCOMPARE(c.result(3).finishReason, std::string("length"));
    QCOMPARE(std::count(c.result(3).ids.begin(), c.result(3).ids.end(), requests[3].stopIds[0]), 0);
  }

  void stopStringsIdsAndMinTokens() {
    infer::SchedulerOptions so;
    so.maxModelLen = 128;
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    engine->submit(c.wrap(greedy(promptOf(4, 3), 40), 0));
    QVERIFY(c.wait());
    const infer::ServeResult full = c.result(0);
    QVERIFY(full.text.size() >= 20);
    // A stop string from the middle of the text: output ends right before it.
    const std::string stop = full.text.substr(10, 3);
    const size_t at = full.text.find(stop);
    infer::ServeRequest r = greedy(promptOf(4, 3), 40);
    r.stopStrings = {stop};
    engine->submit(c.wrap(r, 1));
    // A stop id: the 5th greedy token ends it and is not part of the output.
    infer::ServeRequest r2 = greedy(promptOf(4, 3), 40);
    r2.stopIds = {full.ids[4]};
    engine->submit(c.wrap(r2, 2));
    // min_tokens keeps a stop id from ending it before 8 tokens.
    infer::ServeRequest r3 = r2;
    r3.minTokens = 8;
    engine->submit(c.wrap(r3, 3));
    QVERIFY(c.wait());
    QCOMPARE(c.result(1).finishReason, std::string("stop"));
    QCOMPARE(c.result(1).text, full.text.substr(0, at));
    QCOMPARE(c.streamed(1) + c.result(1).unsent, full.text.substr(0, at));  // the stop string never streamed
    QCOMPARE(c.result(1).stopReason, stop);
    const size_t firstStop = size_t(std::find(full.ids.begin(), full.ids.end(), full.ids[4]) - full.ids.begin());
    QCOMPARE(c.result(2).ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + long(firstStop)));
    QCOMPARE(c.result(2).finishReason, std::string("stop"));
    QVERIFY(c.result(3).ids.size() >= 8);
  }

  void cancelFreesTheSlot() {
    infer::SchedulerOptions so;
    so.maxBatch = 1;
    so.maxModelLen = 4096;
    auto engine = infer::BatchScheduler::open(dir_, so);
    Collector c;
    const uint64_t id = engine->submit(c.wrap(greedy(promptOf(4, 1), 4000), 0));
    engine->submit(c.wrap(greedy(promptOf(4, 2), 5), 1));  // waits for the only slot
    engine->cancel(id);
    QVERIFY(c.wait());
    QCOMPARE(c.result(0).finishReason, std::string("cancelled"));
    QVERIFY(c.result(0).ids.size() < 4000);
    QCOMPARE(c.result(1).finishReason, std::string("length"));
    QCOMPARE(engine->stats().cancelled, uint64_t(1));
    QCOMPARE(engine->stats().running, 0);
  }

  // The after-step hook (a server's one wake per step) runs on the scheduler thread after
  // every step, once the step's tokens reached onToken: each call sees a token count that is
  // a whole number of steps' worth (3 streams decoding together: a multiple of 3), the last
  // call sees all of them, and a cleared hook is not called again.
  void afterStepRunsOnceTheStepsTokensAreOut() {
    infer::SchedulerOptions so;
    so.maxBatch = 4;
    so.maxModelLen = 4096;
    auto engine = infer::BatchScheduler::open(dir_, so);
    std::mutex mu;
    int tokens = 0;
    std::thread::id tokenThread;
    std::vector<int> seen;  // tokens out at each call
    bool sameThread = true;
    engine->setAfterStep([&] {
      std::lock_guard<std::mutex> lk(mu);
      seen.push_back(tokens);
      sameThread = sameThread && (tokens == 0 || std::this_thread::get_id() == tokenThread);
    });
    std::condition_variable cv;
    int done = 0;
    engine->holdForTesting(true);  // the three start together
    for (int i = 0; i < 3; ++i) {
      infer::ServeRequest r = greedy(promptOf(4, i), 6);
      r.onToken = [&](int32_t, const std::string&) {
        std::lock_guard<std::mutex> lk(mu);
        ++tokens;
        tokenThread = std::this_thread::get_id();
        return true;
      };
      r.onDone = [&](const infer::ServeResult&) {
        std::lock_guard<std::mutex> lk(mu);
        ++done;
        cv.notify_all();
      };
      engine->submit(std::move(r));
    }
    engine->holdForTesting(false);
    {
      std::unique_lock<std::mutex> lk(mu);
      QVERIFY(cv.wait_for(lk, std::chrono::minutes(1), [&] { return done == 3; }));
    }
    for (int i = 0; i < 200; ++i) {  // the call after the last step may still be under way
      {
        std::lock_guard<std::mutex> lk(mu);
        if (!seen.empty() && seen.back() == 18) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    engine->setAfterStep({});
    size_t calls = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      QCOMPARE(tokens, 18);
      QVERIFY(sameThread);
      QVERIFY(seen.size() >= 5);  // a call per scheduler iteration (the prefill shares one with a decode step)
      for (int n : seen) QVERIFY2(n % 3 == 0, qPrintable(QString("a call saw %1 tokens").arg(n)));
      QCOMPARE(seen.back(), 18);
      calls = seen.size();
    }
    Collector c;  // a request run without a hook: no further call
    engine->submit(c.wrap(greedy(promptOf(4, 9), 3), 0));
    QVERIFY(c.wait());
    std::lock_guard<std::mutex> lk(mu);
    QCOMPARE(seen.size(), calls);
  }

  void rejectsRequestsThatCannotRun() {
    infer::SchedulerOptions so;
    so.maxModelLen = 64;
    so.loras = {{"a", dir_ + "/lora_a"}};
    auto engine = infer::BatchScheduler::open(dir_, so);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine->submit(greedy(promptOf(60, 1), 10)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine->submit(greedy({}, 10)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine->submit(greedy(promptOf(4, 1), 10, "nope")));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine->submit(greedy({9999}, 10)));
  }
};

QTEST_GUILESS_MAIN(TestBatchScheduler)
#include "test_batch_scheduler.moc"
