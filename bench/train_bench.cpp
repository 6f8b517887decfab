// LoRA training throughput (forward + backward + clip + AdamW, steady state) of crosslab's
// Trainer against the PyTorch eager peer (ref_lora_train.py, what HF Trainer + PEFT run) on
// the same checkpoint and shapes, in the same run. Prints one line per figure.
//
//   train_bench CKPT [--peer /tmp/peers/ref_lora_train.py] [--steps N] [--threads T] [--dtypes f32,bf16]
//
// Shapes: batch 4 × 128 tokens of random ids; "all" trains every position, "sft" masks the
// first 75% of label positions (--prompt-frac 0.75 on the peer). The first 2 steps are
// warm-up, as the peer counts them.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "core/model/llama.h"
#include "core/train/trainer.h"

using namespace crosslab;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBatch = 4, kSeq = 128, kWarmup = 2;

// bf16 matmul GFLOP/s on 2048³ (the machine's practical peak for this stack).
double matmulPeakGflops(at::ScalarType dtype) {
  const auto a = at::randn({2048, 2048}).to(dtype), b = at::randn({2048, 2048}).to(dtype);
  at::matmul(a, b);
  const int reps = 8;
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) at::matmul(a, b);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
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

double ourTokensPerSecond(model::LlamaModel& m, int steps, double promptFrac) {
  train::Recipe r = train::Recipe::labDefaults();
  r.perDeviceTrainBatchSize = kBatch;
  r.gradientAccumulationSteps = 1;
  r.numTrainEpochs = 1;
  r.lrSchedulerType = "constant";
  std::vector<Clock::time_point> stamps;
  train::TrainerOptions o;
  o.onEvent = [&](const train::TrainEvent& e) {
    if (e.event == "step") stamps.push_back(Clock::now());
  };
  train::Trainer t(m, r, randomBatches(steps, m.config().vocabSize, promptFrac), {}, o);
  t.run();
  const double s = std::chrono::duration<double>(stamps.back() - stamps[kWarmup - 1]).count();
  return double(steps - kWarmup) * kBatch * kSeq / s;
}

double peerTokensPerSecond(const std::string& peer, const std::string& ckpt, int steps, bool bf16, double promptFrac,
                           int threads) {
  const std::string cmd = "/usr/bin/python3 '" + peer + "' '" + ckpt + "' --steps " + std::to_string(steps) +
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

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: train_bench CKPT [--peer ref_lora_train.py] [--steps N] [--threads T] [--dtypes f32,bf16]\n";
    return 2;
  }
  const std::string ckpt = argv[1];
  std::string peer, dtypes = "f32,bf16";
  int steps = 6, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--peer") peer = v;
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--dtypes") dtypes = v;
  }
  at::set_num_threads(threads);
  const double peak = matmulPeakGflops(at::kBFloat16);
  std::printf("matmul bf16 peak (2048^3): %.1f GFLOP/s; fp32: %.1f GFLOP/s; threads %d\n", peak,
              matmulPeakGflops(at::kFloat), threads);
  for (const bool bf16 : {false, true}) {
    if (dtypes.find(bf16 ? "bf16" : "f32") == std::string::npos) continue;
    auto m = model::LlamaModel::load(ckpt, bf16 ? at::kBFloat16 : at::kFloat, at::kCPU);
    const auto& c = m.config();
    // Frozen-base LoRA training ≈ 4 FLOPs per linear weight per token (forward + input
    // gradients; no weight gradients), plus the LM head at trained positions only.
    const double linear = double(c.numLayers) * double(c.hiddenSize) *
                          (2.0 * double(c.numHeads * c.headDim) + 2.0 * double(c.numKvHeads * c.headDim) +
                           3.0 * double(c.intermediateSize));
    for (const double frac : {0.0, 0.75}) {
      const double ours = ourTokensPerSecond(m, steps, frac);
      const double head = double(c.vocabSize) * double(c.hiddenSize) * (1.0 - frac);
      const double achieved = ours * 4.0 * (linear + head) / 1e9;
      std::printf("crosslab %s %s: %.1f tokens/s (%.1f GFLOP/s, %.1f%% of bf16 peak)\n", bf16 ? "bf16" : "f32",
                  frac > 0 ? "sft(75% masked)" : "all-positions", ours, achieved, 100.0 * achieved / peak);
      if (!peer.empty()) {
        const double theirs = peerTokensPerSecond(peer, ckpt, steps, bf16, frac, threads);
        std::printf("peer     %s %s: %.1f tokens/s  -> ratio crosslab/peer %.2fx\n", bf16 ? "bf16" : "f32",
                    frac > 0 ? "sft(75% masked)" : "all-positions", theirs, theirs > 0 ? ours / theirs : 0.0);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
