// LoRA training throughput (forward + backward + clip + AdamW, steady state) of crosslab's
// Trainer against the PyTorch eager peer (ref_lora_train.py, what HF Trainer + PEFT run) on
// the same checkpoint and shapes, in the same run. Prints one line per figure.
//
//   train_bench CKPT [--peer /tmp/peers/ref_lora_train.py] [--steps N] [--threads T] [--dtypes f32,bf16]
//               [--clock wall|cpu]
//
// --clock cpu times both sides by process CPU seconds instead of wall seconds (the peer's
// time.perf_counter is pointed at time.process_time): with --threads 1 on a shared, busy
// machine that measures the work each side does rather than how much of the CPU it got.
// Figures for the record are wall clock on an idle machine (the default).
//
// Shapes: batch 4 × 128 tokens of random ids; "all" trains every position, "sft" masks the
// first 75% of label positions (--prompt-frac 0.75 on the peer). The first 2 steps are
// warm-up, as the peer counts them.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/model/llama.h"
#include "core/train/trainer.h"

using namespace crosslab;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBatch = 4, kSeq = 128, kWarmup = 2;
bool gCpuClock = false;

double nowSeconds() {
  if (gCpuClock) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// bf16 matmul GFLOP/s on 2048³ (the machine's practical peak for this stack).
double matmulPeakGflops(at::ScalarType dtype) {
  const auto a = at::randn({2048, 2048}).to(dtype), b = at::randn({2048, 2048}).to(dtype);
  at::matmul(a, b);
  const int reps = 8;
  const double t0 = nowSeconds();
  for (int i = 0; i < reps; ++i) at::matmul(a, b);
  const double s = nowSeconds() - t0;
  return reps * 2.0 * 2048.0 * 2048.0 * 2048.0 / s / 1e9;
}

std::vector<train::EncodedExample> randomBatches(int steps, int64_t vocab, double promptFrac) {
  std::mt19937 rng(0);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
  std::vector<train::EncodedExample> out(size_t(steps * kBatch));
  const int masked = int(promptFrac * kSeq) + 1;  // label position t+1 of input t: first 75% of targets
  for (auto& e : out) {
    for (int t = 0; t < kSeq; ++t) e.inputIds.push_back(pick(rng));
    e.labels = e.inputIds;
    for (int t = 0; t < masked && t < kSeq; ++t) e.labels[size_t(t)] = train::kIgnoreIndex;
  }
  return out;
}

struct Ours {
  double tokensPerSecond = 0;
  train::TrainPhaseSeconds phases;  // all steps, warm-up included
};

Ours ourTokensPerSecond(model::LlamaModel& m, int steps, double promptFrac) {
  train::Recipe r = train::Recipe::labDefaults();
  r.perDeviceTrainBatchSize = kBatch;
  r.gradientAccumulationSteps = 1;
  r.numTrainEpochs = 1;
  r.lrSchedulerType = "constant";
  std::vector<double> stamps;
  train::TrainerOptions o;
  o.onEvent = [&](const train::TrainEvent& e) {
    if (e.event == "step") stamps.push_back(nowSeconds());
  };
  train::Trainer t(m, r, randomBatches(steps, m.config().vocabSize, promptFrac), {}, o);
  const auto result = t.run();
  const double s = stamps.back() - stamps[kWarmup - 1];
  return {double(steps - kWarmup) * kBatch * kSeq / s, result.phases};
}

double peerTokensPerSecond(const std::string& peer, const std::string& ckpt, int steps, bool bf16, double promptFrac,
                           int threads) {
  // --clock cpu: the peer's step timer reads process CPU time (its code unchanged).
  const std::string launch =
      gCpuClock ? "/usr/bin/python3 -c 'import os, runpy, sys, time; time.perf_counter = time.process_time; "
                  "sys.argv = sys.argv[1:]; sys.path.insert(0, os.path.dirname(sys.argv[0])); runpy.run_path(sys.argv[0], run_name=\"__main__\")' '" + peer + "'"
                : "/usr/bin/python3 '" + peer + "'";
  const std::string cmd = launch + " '" + ckpt + "' --steps " + std::to_string(steps) +
                          " --seq " + std::to_string(kSeq) + " --batch " + std::to_string(kBatch) +
                          (bf16 ? " --bf16" : "") + " --prompt-frac " + std::to_string(promptFrac) + " --threads " +
                          std::to_string(threads);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  const auto k = out.find("\"tokens_per_s\": ");
  return k == std::string::npos ? 0 : std::stod(out.substr(k + 16));
}

}  // namespace

constexpr const char* kUsage =
    "usage: train_bench CKPT [--peer ref_lora_train.py] [--steps N] [--threads T] [--dtypes f32,bf16] "
    "[--clock wall|cpu]\n";

// A whole number in [min, max], else a usage error naming the option.
int wholeNumber(const std::string& option, const std::string& text, int min, int max) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < min || v > max)
    throw std::invalid_argument(option + " needs a whole number in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], not '" + text + "'");
  return v;
}

int runBench(int argc, char** argv);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  try {
    return runBench(argc, argv);
  } catch (const std::invalid_argument& e) {  // usage
    std::cerr << "train_bench: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "train_bench: " << e.what() << "\n";
    return 1;
  }
}

int runBench(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') throw std::invalid_argument("the checkpoint folder CKPT comes first");
  const std::string ckpt = argv[1];
  std::string peer, dtypes = "f32,bf16";
  int steps = 6, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 2; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
    const std::string v = argv[i + 1];
    // Throughput is timed after the warm-up steps: at least one more step is needed.
    if (k == "--peer") peer = v;
    else if (k == "--steps") steps = wholeNumber(k, v, kWarmup + 1, 1000000);
    else if (k == "--threads") threads = wholeNumber(k, v, 1, 4096);
    else if (k == "--dtypes") dtypes = v;
    else if (k == "--clock" && (v == "cpu" || v == "wall")) gCpuClock = v == "cpu";
    else throw std::invalid_argument("unknown option " + k + (k == "--clock" ? " value '" + v + "'" : ""));
  }
  if (dtypes.find("f32") == std::string::npos && dtypes.find("bf16") == std::string::npos)
    throw std::invalid_argument("--dtypes names f32, bf16 or both");
  at::set_num_threads(threads);
  const double peakBf16 = matmulPeakGflops(at::kBFloat16), peakF32 = matmulPeakGflops(at::kFloat);
  std::printf("matmul peak (2048^3): bf16 %.1f GFLOP/s, fp32 %.1f GFLOP/s; threads %d (intra-op %d); %s clock\n", peakBf16,
              peakF32, threads, at::get_num_threads(), gCpuClock ? "process CPU" : "wall");
  for (const bool bf16 : {false, true}) {
    if (dtypes.find(bf16 ? "bf16" : "f32") == std::string::npos) continue;
    auto m = model::LlamaModel::load(ckpt, bf16 ? at::kBFloat16 : at::kFloat, at::kCPU);
    const auto& c = m.config();
    // Frozen-base LoRA training ≈ 4 FLOPs per linear weight per token (forward + input
    // gradients; no weight gradients), plus the LM head at trained positions only.
    const double linear = double(c.numLayers) * double(c.hiddenSize) *
                          (2.0 * double(c.numHeads * c.headDim) + 2.0 * double(c.numKvHeads * c.headDim) +
                           3.0 * double(c.intermediateSize));
    const double peak = bf16 ? peakBf16 : peakF32;
    for (const double frac : {0.0, 0.75}) {
      const Ours ours = ourTokensPerSecond(m, steps, frac);
      const double head = double(c.vocabSize) * double(c.hiddenSize) * (1.0 - frac);
      const double achieved = ours.tokensPerSecond * 4.0 * (linear + head) / 1e9;
      const char* shape = frac > 0 ? "sft(75% masked)" : "all-positions";
      const char* dt = bf16 ? "bf16" : "f32";
      std::printf("crosslab %s %s: %.1f tokens/s (%.1f useful GFLOP/s, %.1f%% of the %s matmul peak)\n", dt, shape,
                  ours.tokensPerSecond, achieved, 100.0 * achieved / peak, dt);
      const auto& ph = ours.phases;
      const double all = std::max(1e-9, ph.body + ph.head + ph.backward + ph.optimizer);
      std::printf("  phases: body fwd %.0f%%, head fwd %.0f%%, backward %.0f%%, optimizer %.0f%%\n",
                  100 * ph.body / all, 100 * ph.head / all, 100 * ph.backward / all, 100 * ph.optimizer / all);
      if (!peer.empty()) {
        const double theirs = peerTokensPerSecond(peer, ckpt, steps, bf16, frac, threads);
        // The peer does the LM head at every position.
        const double peerAchieved = theirs * 4.0 * (linear + double(c.vocabSize) * double(c.hiddenSize)) / 1e9;
        std::printf("peer     %s %s: %.1f tokens/s (%.1f%% of the %s matmul peak)  -> ratio crosslab/peer %.2fx\n", dt,
                    shape, theirs, 100.0 * peerAchieved / peak, dt, theirs > 0 ? ours.tokensPerSecond / theirs : 0.0);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
