// engine_bench: load a checkpoint, prefill a prompt, greedy-decode N tokens with the local
// engine; print one JSON line with load time, prefill and decode tokens/s, peak memory and
// the generated ids (so a driver can compare them with llama.cpp's greedy ids).
//
//   engine_bench --model DIR [--dtype f32|bf16] [--threads T] [--decode N] [--prompt-ids JSON] [--load map|copy]
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>

#include "core/infer/local_engine.h"

namespace {

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
    nlohmann::json out = {{"engine", "crosslab"},          {"model", model},
                          {"dtype", dtype},                {"threads", threads},  {"load", load},
                          {"load_s", loadS},               {"model_load_s", engine->modelLoadSeconds()},
                          {"tokenizer_load_s", engine->tokenizerLoadSeconds()}, {"first_forward_s", firstForwardS},               {"prompt_tokens", r.promptTokens},
                          {"prefill_tok_s", r.prefillTokPerS()}, {"ttft_s", r.prefillSeconds},
                          {"decode_tok_s", r.decodeTokPerS()},   {"decode_n", r.ids.size()},
                          {"peak_rss_mib", peakRssMiB()},  {"ids", r.ids}};
    std::cout << out.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "engine_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
