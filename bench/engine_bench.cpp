// engine_bench: load a checkpoint, prefill a prompt, greedy-decode N tokens with the local
// engine; print one JSON line with load time, prefill and decode tokens/s, peak memory and
// the generated ids (so a driver can compare them with llama.cpp's greedy ids). Batch-1 decode
// reads every weight once per token: the line also gives the weights' bytes per token, the
// GB/s that makes at the measured decode rate, and the machine's memory read bandwidth that
// this program measures with the same thread count (the physical limit of batch-1 decode).
//
//   engine_bench --model DIR [--dtype f32|bf16] [--threads T] [--decode N] [--prompt-ids JSON] [--load map|copy]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <immintrin.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "core/infer/local_engine.h"

namespace {

// Sums 256 bytes per step with four independent AVX-512 adds (the loads are the point).
__attribute__((target("avx512f"))) float readAvx512(const float* p, int64_t floats) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  for (int64_t i = 0; i + 64 <= floats; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  alignas(64) float t[16];
  _mm512_store_ps(t, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  float s = 0;
  for (float x : t) s += x;
  return s;
}

float readPortable(const float* p, int64_t floats) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i + 8 <= floats; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

// Memory read bandwidth (GB/s, best of 5) over a 1 GiB buffer (far past the caches), split
// over `threads` threads as the decode kernels split a weight matrix.
double memoryReadGBs(int threads) {
  const size_t bytes = size_t(1) << 30;
  auto* p = static_cast<float*>(std::aligned_alloc(1 << 21, bytes));
  if (!p) return 0;
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  const int64_t floats = int64_t(bytes / sizeof(float));
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int saved = at::get_num_threads();
  at::set_num_threads(threads);
  double best = 0;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    at::parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const int64_t begin = floats / threads * c / 64 * 64, end = c + 1 == threads ? floats : floats / threads * (c + 1) / 64 * 64;
        sink = sink + (avx512 ? readAvx512(p + begin, end - begin) : readPortable(p + begin, end - begin));
      }
    });
    best = std::max(best, double(bytes) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9);
  }
  at::set_num_threads(saved);
  std::free(p);
  return best;
}

// Bytes of weights a batch-1 decode step reads: every projection of every layer and the LM
// head (norm vectors and one embedding row are negligible).
double weightBytesPerToken(const crosslab::model::ModelConfig& c, const std::string& dtype) {
  const double H = double(c.hiddenSize), I = double(c.intermediateSize), q = double(c.numHeads * c.headDim),
               kv = double(c.numKvHeads * c.headDim);
  const double perLayer = H * q * 2 + H * kv * 2 + H * I * 3;
  return (perLayer * double(c.numLayers) + double(c.vocabSize) * H) * (dtype == "bf16" ? 2.0 : 4.0);
}

double peakRssMiB() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, dtype = "f32", load = "map", prompt = "[128000, 9906, 11, 1917, 0]";
  int threads = 0, decode = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") model = v;
    else if (k == "--dtype") dtype = v;
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--decode") decode = std::stoi(v);
    else if (k == "--prompt-ids") prompt = v;
    else if (k == "--load") load = v;
    else {
      std::cerr << "engine_bench: unknown option " << k << "\n";
      return 2;
    }
  }
  if (model.empty()) {
    std::cerr << "usage: engine_bench --model DIR [--dtype f32|bf16] [--threads T] [--decode N] [--prompt-ids JSON] [--load map|copy]\n";
    return 2;
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    crosslab::infer::EngineOptions eo{dtype, "cpu", threads, ""};
    eo.copyWeights = load == "copy";
    auto engine = crosslab::infer::LocalEngine::open(model, eo);
    const double loadS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto ids = nlohmann::json::parse(prompt).get<std::vector<int32_t>>();
    crosslab::infer::GenerateOptions g;
    g.maxTokens = decode;
    g.ignoreEos = true;
    // One short warm-up so one-time kernel setup does not count against the first run.
    // Its prefill is the time to first token of a freshly loaded model: on a warm page cache,
    // first_forward_s vs model_load_s shows whether loading or computing dominates.
    const double firstForwardS = engine->generate(ids, {4, {}, {}, {}, true, nullptr, nullptr}).prefillSeconds;
    const auto r = engine->generate(ids, g);
    const int usedThreads = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
    const double weightBytes = weightBytesPerToken(engine->config(), dtype);
    const double peakRss = peakRssMiB();  // before the bandwidth test's buffer
    const double memGBs = memoryReadGBs(usedThreads);
    nlohmann::json out = {{"engine", "crosslab"},          {"model", model},
                          {"dtype", dtype},                {"threads", threads},  {"load", load},
                          {"load_s", loadS},               {"model_load_s", engine->modelLoadSeconds()},
                          {"tokenizer_load_s", engine->tokenizerLoadSeconds()}, {"first_forward_s", firstForwardS},               {"prompt_tokens", r.promptTokens},
                          {"prefill_tok_s", r.prefillTokPerS()}, {"ttft_s", r.prefillSeconds},
                          {"decode_tok_s", r.decodeTokPerS()},   {"decode_n", r.ids.size()},
                          {"peak_rss_mib", peakRss},
                          {"weights_gb_per_token", weightBytes / 1e9},
                          {"weights_gb_s", weightBytes * r.decodeTokPerS() / 1e9},
                          {"memory_read_gb_s", memGBs},
                          {"memory_threads", usedThreads},
                          {"share_of_memory_bandwidth", memGBs > 0 ? weightBytes * r.decodeTokPerS() / 1e9 / memGBs : 0.0},
                          {"ids", r.ids}};
    std::cout << out.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "engine_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
