// batch_bench: the batch scheduler in process (no HTTP) at several concurrency levels — the
// figure to hold against llama.cpp's batched decode (peers/node/llamacpp_batch.mjs: N
// sequences in one context) and against the same levels through `crosslab-cli serve` +
// `crosslab-cli bench`.
//
//   batch_bench --model DIR [--dtype f32|bf16] [--levels 1,8,32] [--tokens N] [--prompt-ids JSON]
//               [--lora DIR --lora-mode merged|runtime] [--threads T] [--load map|copy]
//               [--decode-path auto|fused|fused-split|op-by-op] [--max-batch N] [--prefill-chunk N]
//               [--prefill-batch N] [--stepwise-prefill N] [--peak on|off] [--rounds K]
//               [--max-model-len N]
//
// Per level, N identical greedy requests (ignore EOS, --tokens each) are submitted at once;
// with --rounds K, K such waves back to back, each submitted when the last one has ended (as
// `crosslab-cli bench` at concurrency N sends its max(8, 2N) requests of one length), and the
// figures below are over all of them (windows and walls summed, percentiles pooled).
// --max-model-len: the KV cache's positions per row (default: the prompt, --tokens and 8), e.g.
// `serve`'s default of the model's own limit: each row's keys then lie that many positions
// apart (the demo model in f32 at 2048: 256 KiB, a power of two).
// One JSON line per level:
//   decode_tok_s   tokens per second while every stream decodes: tokens stamped after the last
//                  stream's first token and up to the first stream's last, over that window —
//                  what llamacpp_batch.mjs reports (it leaves prefill out)
//   output_tok_s   all output tokens / (last token - submission): vLLM's output_throughput,
//                  the figure the HTTP path (`crosslab-cli bench`) reports
//   output_tok_per_cpu_s  output tokens per second of the process's CPU time (all threads): on
//                  a busy machine a steadier figure than the wall-clock ones
//   ttft / tpot p50 and p99 (ms), and where the scheduler thread's time went (share of wall
//   time: prefill, decode forward, of it the fused step's matmul / LoRA / attention / rest,
//   LM head, sampling, emitting tokens, idle) and the decode paths it chose.
// It runs the scheduler as `crosslab-cli serve` does: OpenMP's idle workers sleep instead of
// spinning (core/util/openmp_waits.h; an OMP_WAIT_POLICY the caller set is kept). Spinning
// workers cost this program too (on the 2-core VM, demo model, bf16, 32 streams: 15-19k tok/s
// with libgomp's default, 13k with OMP_WAIT_POLICY=ACTIVE, 18-23k passive).
// The first line reports the machine's compute peak the program measures (bf16 or f32 GEMM
// through ATen and through our kernels, all threads) and its arithmetic peak (multiply-adds on
// registers, all threads); each level's "rates" give the decode products' GFLOP/s and their
// share of each (bench_support.h: decodeRates).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/infer/batch_scheduler.h"
#include "bench/bench_support.h"
#include "core/util/openmp_waits.h"

using namespace crosslab;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string model, dtype = "f32", lora, loraMode = "runtime", load = "map", decodePath = "auto";
  std::vector<int> levels = {1, 8, 32};
  std::vector<int32_t> prompt = {128000, 9906, 11, 1917, 0};
  int tokens = 128, threads = 0, maxBatch = 0, rounds = 1, maxModelLen = 0;
  int prefillChunk = infer::SchedulerOptions{}.prefillChunk, stepwisePrefill = infer::SchedulerOptions{}.stepwisePrefill;
  int prefillBatch = infer::SchedulerOptions{}.prefillBatch;
  bool peak = true;
  benchsupport::Peaks peaks;  // measured at start (--peak on)
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--dtype") o.dtype = v;
    else if (k == "--lora") o.lora = v;
    else if (k == "--lora-mode") o.loraMode = v;
    else if (k == "--load") o.load = v;
    else if (k == "--decode-path") o.decodePath = v;
    else if (k == "--tokens") o.tokens = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--max-batch") o.maxBatch = std::stoi(v);
    else if (k == "--rounds") o.rounds = std::stoi(v);
    else if (k == "--max-model-len") o.maxModelLen = std::stoi(v);
    else if (k == "--prefill-chunk") o.prefillChunk = std::stoi(v);
    else if (k == "--prefill-batch") o.prefillBatch = std::stoi(v);
    else if (k == "--stepwise-prefill") o.stepwisePrefill = std::stoi(v);
    else if (k == "--peak") o.peak = v != "off";
    else if (k == "--prompt-ids") o.prompt = json::parse(v).get<std::vector<int32_t>>();
    else if (k == "--levels") {
      o.levels.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.levels.push_back(std::stoi(x));
    } else
      throw std::runtime_error("unknown option " + k);
  }
  if (o.model.empty()) throw std::runtime_error("usage: batch_bench --model DIR [options] (see the source's header)");
  if (o.loraMode != "merged" && o.loraMode != "runtime") throw std::runtime_error("--lora-mode must be merged or runtime");
  if (o.rounds < 1) throw std::runtime_error("--rounds must be >= 1");
  return o;
}

double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = p / 100.0 * double(v.size() - 1);
  const size_t lo = size_t(at);
  return lo + 1 < v.size() ? v[lo] + (at - double(lo)) * (v[lo + 1] - v[lo]) : v[lo];
}

struct Stream {
  std::vector<Clock::time_point> stamps;
  bool done = false;
};

// One wave: `level` requests submitted at once, returned when every one has ended.
std::vector<Stream> runWave(infer::BatchScheduler& engine, const Options& o, int level, const std::string& adapter) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Stream> streams(static_cast<size_t>(level));
  int pending = level;
  for (int s = 0; s < level; ++s) {
    infer::ServeRequest r;
    r.prompt = o.prompt;
    r.maxTokens = o.tokens;
    r.ignoreEos = true;
    r.adapter = adapter;
    r.onToken = [&, s](int32_t, const std::string&) {
      streams[size_t(s)].stamps.push_back(Clock::now());  // the scheduler thread only
      return true;
    };
    r.onDone = [&](const infer::ServeResult&) {
      std::lock_guard<std::mutex> lk(mu);
      if (--pending == 0) cv.notify_all();
    };
    engine.submit(std::move(r));
  }
  std::unique_lock<std::mutex> lk(mu);
  cv.wait(lk, [&] { return pending == 0; });
  return streams;
}

json runLevel(infer::BatchScheduler& engine, const Options& o, int level, const std::string& adapter, int rounds = 1) {
  const infer::SchedulerStats before = engine.stats();
  const double cpu0 = processCpuSeconds();
  size_t total = 0, inWindow = 0, streamCount = 0;
  double window = 0, wall = 0;
  std::vector<double> ttft, tpot;
  for (int round = 0; round < rounds; ++round) {
    const auto t0 = Clock::now();
    const std::vector<Stream> streams = runWave(engine, o, level, adapter);
    Clock::time_point firstAll = t0, lastFirst = t0, end = t0;
    for (const auto& st : streams) {
      if (st.stamps.empty()) continue;
      firstAll = std::max(firstAll, st.stamps.front());
      end = std::max(end, st.stamps.back());
      total += st.stamps.size();
      ++streamCount;
      ttft.push_back(std::chrono::duration<double, std::milli>(st.stamps.front() - t0).count());
      if (st.stamps.size() > 1)
        tpot.push_back(std::chrono::duration<double, std::milli>(st.stamps.back() - st.stamps.front()).count() /
                       double(st.stamps.size() - 1));
    }
    lastFirst = end;
    for (const auto& st : streams)
      if (!st.stamps.empty()) lastFirst = std::min(lastFirst, st.stamps.back());
    for (const auto& st : streams)  // every stream decoding: (last stream's first token, first stream's last]
      for (const auto& t : st.stamps) inWindow += t > firstAll && t <= lastFirst;
    window += std::chrono::duration<double>(lastFirst - firstAll).count();
    wall += std::chrono::duration<double>(end - t0).count();
  }
  const infer::SchedulerStats after = engine.stats();
  const double cpu = processCpuSeconds() - cpu0;
  const auto share = [&](double s) { return wall > 0 ? s / wall : 0.0; };
  const double busy = (after.prefillS - before.prefillS) + (after.decodeS - before.decodeS) + (after.lmHeadS - before.lmHeadS) +
                      (after.sampleS - before.sampleS) + (after.emitS - before.emitS);
  return {{"level", level},
          {"rounds", rounds},
          {"output_tokens", total},
          {"decode_tok_s", window > 0 ? double(inWindow) / window : 0.0},
          {"output_tok_s", wall > 0 ? double(total) / wall : 0.0},
          {"cpu_s", cpu},
          {"output_tok_per_cpu_s", cpu > 0 ? double(total) / cpu : 0.0},
          {"ttft_ms_p50", percentile(ttft, 50)},
          {"ttft_ms_p99", percentile(ttft, 99)},
          {"tpot_ms_p50", percentile(tpot, 50)},
          {"tpot_ms_p99", percentile(tpot, 99)},
          {"steps", after.steps - before.steps},
          {"fused_steps", after.fusedSteps - before.fusedSteps},
          {"split_steps", after.splitSteps - before.splitSteps},
          {"op_by_op_steps", after.opByOpSteps - before.opByOpSteps},
          {"prefill_steps", after.prefillSteps - before.prefillSteps},
          {"stepwise_prefill_steps", after.fusedPrefillSteps - before.fusedPrefillSteps},
          {"decode_paths", after.decodePaths},
          {"rates", benchsupport::decodeRates(before, after, double(total - streamCount), engine.config(), o.peaks)},
          {"time_share",
           {{"prefill", share(after.prefillS - before.prefillS)},
            {"decode_forward", share(after.decodeS - before.decodeS)},
            {"fused_matmul", share(after.fusedMatmulS - before.fusedMatmulS)},
            {"fused_lora", share(after.fusedLoraS - before.fusedLoraS)},
            {"fused_attention", share(after.fusedAttentionS - before.fusedAttentionS)},
            {"fused_other", share(after.fusedOtherS - before.fusedOtherS)},
            {"lm_head", share(after.lmHeadS - before.lmHeadS)},
            {"sampling", share(after.sampleS - before.sampleS)},
            {"emit", share(after.emitS - before.emitS)},
            {"scheduler_idle_or_other", share(wall - busy)}}}};
}

}  // namespace

int main(int argc, char** argv) {
  util::reexecWithPassiveOpenMpWaits(argv);  // before libgomp starts a thread: as `serve` runs
  try {
    Options o = parse(argc, argv);
    infer::SchedulerOptions so;
    so.maxBatch = o.maxBatch > 0 ? o.maxBatch : *std::max_element(o.levels.begin(), o.levels.end());
    so.maxModelLen = o.maxModelLen > 0 ? o.maxModelLen : int(o.prompt.size()) + o.tokens + 8;
    so.prefillChunk = o.prefillChunk;
    so.prefillBatch = o.prefillBatch;
    so.stepwisePrefill = o.stepwisePrefill;
    so.dtype = o.dtype;
    so.threads = o.threads;
    so.copyWeights = o.load == "copy";
    so.decodePath = o.decodePath;
    std::string adapter;
    if (!o.lora.empty()) {
      if (o.loraMode == "merged") {
        so.mergeAdapter = o.lora;
      } else {
        so.loras = {{"adapter", o.lora}};
        adapter = "adapter";
      }
    }
    auto engine = infer::BatchScheduler::open(o.model, so);
    at::set_num_threads(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency())));
    if (o.peak) {
      const json p = benchsupport::computePeak(o.dtype == "bf16" ? at::kBFloat16 : at::kFloat);
      std::cout << p.dump() << std::endl;
      o.peaks = benchsupport::Peaks::of(p);
    }
    // One-time setup out of the measured levels: the widest level once, whole, so that every
    // row's KV-cache pages are touched before any level is timed (a first touch is slow on a VM:
    // memory never used since boot), as the HTTP sweep's warm-up does (serving_vs_llamacpp.py).
    runLevel(*engine, o, *std::max_element(o.levels.begin(), o.levels.end()), adapter);
    for (int level : o.levels) {
      json j = runLevel(*engine, o, level, adapter, o.rounds);
      j["engine"] = "crosslab";
      j["path"] = "in-process";
      j["model"] = o.model;
      j["dtype"] = o.dtype;
      j["lora"] = o.lora.empty() ? "none" : o.loraMode;
      j["threads"] = o.threads;
      std::cout << j.dump() << std::endl;
    }
    engine->stop();
  } catch (const std::exception& e) {
    std::cerr << "batch_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
