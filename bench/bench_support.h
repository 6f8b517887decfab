#pragma once
// Shared by the serving benchmarks (batch_bench, serve_bench): the compute peaks the program
// measures, FLOPs per decoded token, and CPU time per thread group of this process.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dirent.h>
#include <immintrin.h>
#include <nlohmann/json.hpp>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/infer/batch_scheduler.h"
#include "core/model/cpu_matmul.h"
#include "core/model/model_config.h"

// computePeak splits our kernels' product with at::parallel_for, which runs on one thread in a
// file compiled without OpenMP (ATen/ParallelOpenMP.h): serve_bench did so until 2026-12-07 and
// printed one thread's figure as the peak of two (shares of 1.6).
#ifndef _OPENMP
#error "bench_support.h: link this program with OpenMP::OpenMP_CXX (computePeak's split needs it)"
#endif

namespace crosslab::benchsupport {

namespace detail {
// Twelve independent multiply-add chains in registers (their inputs never leave them), `count`
// times: 12 x lanes x 2 FLOP each time. Twelve chains cover a multiply-add's latency on two
// pipes (4-5 cycles x 2). One lane of the sum is returned so that the loop is kept.
#define CROSSLAB_FMA_CHAINS(V, SET1, FMA, FIRST)    \
  V a[12];                                          \
  for (auto& v : a) v = SET1(1.0f);                 \
  const V m = SET1(0.999999f), c = SET1(1e-7f);     \
  for (int64_t i = 0; i < count; ++i) {             \
    _Pragma("GCC unroll 12") for (auto& v : a) v = FMA(v, m, c); \
  }                                                 \
  V s = a[0];                                       \
  for (int j = 1; j < 12; ++j) s = FMA(s, m, a[j]); \
  return FIRST(s);
__attribute__((target("avx512f"))) inline float fmaChains512(int64_t count) {
  CROSSLAB_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_cvtss_f32)
}
__attribute__((target("avx2,fma"))) inline float fmaChains256(int64_t count) {
  CROSSLAB_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_cvtss_f32)
}
inline float same(float x) { return x; }
inline float mulAdd(float a, float b, float c) { return a * b + c; }
inline float fmaChains1(int64_t count) { CROSSLAB_FMA_CHAINS(float, same, mulAdd, same) }
#undef CROSSLAB_FMA_CHAINS
}  // namespace detail

// The machine's arithmetic peak: every one of `threads` threads runs multiply-add chains on
// registers alone (the widest vectors the CPU has: AVX-512, AVX2 with FMA, else scalar), no
// memory traffic; GFLOP/s of them all over the wall time, the best of three ~0.2 s runs. No
// product can go faster; a decode step's share of it says how far the kernels are from the
// silicon (the GEMM peak below says how far from the best product we have).
inline nlohmann::json arithmeticPeak(int threads) {
  int lanes = 1;
  float (*chains)(int64_t) = detail::fmaChains1;
  std::string isa = "scalar";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    lanes = 16, isa = "avx512", chains = detail::fmaChains512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    lanes = 8, isa = "avx2_fma", chains = detail::fmaChains256;
  }
  const auto timed = [&](int64_t count) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> crew;
    std::atomic<float> sink{0};
    for (int t = 0; t < threads; ++t)
      crew.emplace_back([&] {
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        sink.store(chains(count));
      });
    while (ready.load() < threads) std::this_thread::yield();
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true);
    for (auto& t : crew) t.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int64_t count = 1 << 20;
  const double first = timed(count);
  count = std::max<int64_t>(count, int64_t(double(count) * 0.2 / std::max(first, 1e-6)));
  double best = 1e9;
  for (int r = 0; r < 3; ++r) best = std::min(best, timed(count));
  const double flops = double(threads) * double(count) * 12.0 * lanes * 2.0;
  return {{"arith_peak_gflop_s", flops / best / 1e9}, {"arith_isa", isa}, {"arith_threads", threads}};
}

// GFLOP/s of a square GEMM through ATen (oneDNN for bf16, OpenBLAS for f32) and of our decode
// kernels on a cache-resident matrix with 64 rows, every thread; the better is the peak.
inline nlohmann::json computePeak(at::ScalarType dtype) {
  // Each sample runs f often enough for ~50 ms, so that a sleeping worker's wake or one thread's
  // late start is a small share of it (one 2 ms product per sample printed 59 to 84 GFLOP/s
  // for the same bf16 kernel on two threads); the best of five samples.
  const auto best = [](const std::function<void()>& f, double flops) {
    const auto timed = [&](int times) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < times; ++i) f();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / times;
    };
    const int times = std::max(1, int(0.05 / std::max(timed(1), 1e-6)));
    double t = 1e9;
    for (int r = 0; r < 5; ++r) t = std::min(t, timed(times));
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
  nlohmann::json out = {{"peak", "compute"},          {"dtype", dtype == at::kBFloat16 ? "bf16" : "f32"},
                        {"threads", at::get_num_threads()}, {"aten_gemm_gflop_s", aten},
                        {"decode_kernel_gflop_s", ours},    {"peak_gflop_s", std::max(aten, ours)}};
  out.update(arithmeticPeak(at::get_num_threads()));
  return out;
}

// The two peaks a rate is held against: the best product the program measured (computePeak's
// peak_gflop_s) and the arithmetic one (arith_peak_gflop_s). 0: not measured.
struct Peaks {
  double gemm = 0, arith = 0;
  static Peaks of(const nlohmann::json& p) { return {p["peak_gflop_s"].get<double>(), p["arith_peak_gflop_s"].get<double>()}; }
};

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
// the measured GEMM peak and of the arithmetic peak.
inline nlohmann::json decodeRates(const infer::SchedulerStats& a, const infer::SchedulerStats& b, double decoded,
                                  const model::ModelConfig& config, const Peaks& peaks) {
  const auto rate = [](double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e9 : 0.0; };
  const double perToken = projectionFlopsPerToken(config);
  const double forward = rate(decoded * perToken, b.decodeS - a.decodeS);
  const double fused = rate(double(b.fusedRows - a.fusedRows) * perToken, b.fusedMatmulS - a.fusedMatmulS);
  const double lm = rate(decoded * lmHeadFlopsPerToken(config), b.lmHeadS - a.lmHeadS);
  const auto share = [](double g, double peak) { return peak > 0 ? nlohmann::json(g / peak) : nlohmann::json(nullptr); };
  nlohmann::json out = {{"fused_rows", b.fusedRows - a.fusedRows}};
  for (const auto& [name, g] : {std::pair{"decode_forward", forward}, {"fused_matmul", fused}, {"lm_head", lm}}) {
    const std::string n = name;
    out[n + "_gflop_s"] = g;
    out[n + "_share_of_peak"] = share(g, peaks.gemm);
    out[n + "_share_of_arith_peak"] = share(g, peaks.arith);
  }
  return out;
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
