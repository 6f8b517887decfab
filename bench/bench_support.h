#pragma once
// Shared by the serving benchmarks (batch_bench, serve_bench): the compute peak the program
// measures, FLOPs per decoded token, and CPU time per thread group of this process.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dirent.h>
#include <nlohmann/json.hpp>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "core/infer/batch_scheduler.h"
#include "core/model/cpu_matmul.h"
#include "core/model/model_config.h"

namespace crosslab::benchsupport {

// GFLOP/s of a square GEMM through ATen (oneDNN for bf16, OpenBLAS for f32) and of our decode
// kernels on a cache-resident matrix with 64 rows, every thread; the better is the peak.
inline nlohmann::json computePeak(at::ScalarType dtype) {
  const auto best = [](const std::function<void()>& f, double flops) {
    double t = 1e9;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      t = std::min(t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return flops / t / 1e9;
  };
  const at::Tensor a = at::randn({1024, 1024}).to(dtype), b = at::randn({1024, 1024}).to(dtype);
  const double aten = best([&] { at::mm(a, b); }, 2.0 * 1024 * 1024 * 1024);
  const int64_t rows = 2048, k = 768, n = 64;
  const at::Tensor w = at::randn({rows, k}).to(dtype), x = at::randn({n, k}).to(dtype);
  at::Tensor y = at::empty({n, rows}, at::kFloat);
  float* yp = y.data_ptr<float>();
  double ours = 0;
  if (dtype == at::kBFloat16) {
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    const model::MatmulRows<uint16_t> xr(reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>()), n, k);
    ours = best([&] { at::parallel_for(0, rows, 256, [&](int64_t s, int64_t e) { model::matmulRows(wp + s * k, e - s, xr, yp + s, rows); }); },
                2.0 * double(rows * k * n));
  } else {
    const float* wp = w.data_ptr<float>();
    const model::MatmulRows<float> xr(x.data_ptr<float>(), n, k);
    ours = best([&] { at::parallel_for(0, rows, 256, [&](int64_t s, int64_t e) { model::matmulRows(wp + s * k, e - s, xr, yp + s, rows); }); },
                2.0 * double(rows * k * n));
  }
  return {{"peak", "compute"}, {"dtype", dtype == at::kBFloat16 ? "bf16" : "f32"}, {"threads", at::get_num_threads()},
          {"aten_gemm_gflop_s", aten}, {"decode_kernel_gflop_s", ours}, {"peak_gflop_s", std::max(aten, ours)}};
}

// Multiply-adds x 2 of one decoded token's projections (no LM head, no LoRA) and of the LM head.
inline double projectionFlopsPerToken(const model::ModelConfig& c) {
  const double H = double(c.hiddenSize), I = double(c.intermediateSize), q = double(c.numHeads * c.headDim),
               kv = double(c.numKvHeads * c.headDim);
  return 2.0 * double(c.numLayers) * (H * q * 2 + H * kv * 2 + H * I * 3);
}
inline double lmHeadFlopsPerToken(const model::ModelConfig& c) { return 2.0 * double(c.vocabSize) * double(c.hiddenSize); }

// The decode steps' products between two scheduler snapshots, `decoded` rows through decode
// steps: GFLOP/s of the projections over the whole decode forward (every path; includes
// attention and norms, so a lower bound on the products' rate), of the fused steps' products
// alone (their rows over their product time), and of the LM head; each also as a share of
// the measured peak.
inline nlohmann::json decodeRates(const infer::SchedulerStats& a, const infer::SchedulerStats& b, double decoded,
                                  const model::ModelConfig& config, double peakGflops) {
  const auto rate = [](double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e9 : 0.0; };
  const double perToken = projectionFlopsPerToken(config);
  const double forward = rate(decoded * perToken, b.decodeS - a.decodeS);
  const double fused = rate(double(b.fusedRows - a.fusedRows) * perToken, b.fusedMatmulS - a.fusedMatmulS);
  const double lm = rate(decoded * lmHeadFlopsPerToken(config), b.lmHeadS - a.lmHeadS);
  const auto share = [&](double g) { return peakGflops > 0 ? nlohmann::json(g / peakGflops) : nlohmann::json(nullptr); };
  return {{"decode_forward_gflop_s", forward}, {"decode_forward_share_of_peak", share(forward)},
          {"fused_matmul_gflop_s", fused},     {"fused_matmul_share_of_peak", share(fused)},
          {"fused_rows", b.fusedRows - a.fusedRows},
          {"lm_head_gflop_s", lm},             {"lm_head_share_of_peak", share(lm)}};
}

// CPU seconds of the calling thread (user + system).
inline double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// CPU seconds (user + system) of this process's threads, summed by thread name.
inline std::map<std::string, double> cpuByThreadName() {
  std::map<std::string, double> out;
  const double tick = double(sysconf(_SC_CLK_TCK));
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));  // fields from 3 (state) on
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    out[stat.substr(open + 1, close - open - 1)] += (utime + stime) / tick;
  }
  closedir(d);
  return out;
}

}  // namespace crosslab::benchsupport
