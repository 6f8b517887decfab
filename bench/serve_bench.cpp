// Server batching gain: aggregate output tok/s of `crosslab-cli serve`'s stack (batch
// scheduler + OpenAI server, in process, on a loopback port) at several concurrency levels,
// for an adapter applied at run time vs merged into the weights. The client is a plain
// multi-threaded streaming client: each stream sends --rounds requests back to back
// (ignore_eos, fixed output length) and counts tokens from the usage chunk.
//
//   serve_bench --model DIR --lora DIR [--levels 1,8,32] [--tokens 64] [--rounds 2]
//               [--prompt-len 32] [--dtype f32|bf16] [--max-batch 32] [--threads T] [--load map|copy]
//               [--modes merged,runtime] [--peak on|off] [--decode-path auto|fused|fused-split|op-by-op]
//               [--stream-interval N]
// Prints the compute peaks it measures (the best product and the arithmetic peak: multiply-adds
// on registers, every thread; bench_support.h), one JSON line per (mode, level) and a summary line with
// the ratios. Each level's line says where the time went: the process's CPU seconds by thread
// (the engine thread and its OpenMP workers, the HTTP server's threads, the client's), the
// engine thread's wall-time shares (prefill, the decode forward and inside it the fused step's
// weight products / runtime LoRA / attention / rest, LM head, sampling, handing tokens to the
// server), and the decode products' GFLOP/s as a share of each measured peak (bench_support.h:
// decodeRates). Runs with OMP_WAIT_POLICY=PASSIVE unless set, as `crosslab-cli serve` does.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <pthread.h>

#include "backends/serve/openai_server.h"
#include "bench/bench_support.h"
#include "core/infer/batch_scheduler.h"
#include "core/util/openmp_waits.h"

using namespace crosslab;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string model, lora, dtype = "f32", load = "map", decodePath = "auto";
  std::vector<int> levels = {1, 8, 32};
  std::vector<std::string> modes = {"merged", "runtime"};
  int tokens = 64, rounds = 2, promptLen = 32, maxBatch = 32, threads = 0, streamInterval = 1;
  bool peak = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--lora") o.lora = v;
    else if (k == "--dtype") o.dtype = v;
    else if (k == "--tokens") o.tokens = std::stoi(v);
    else if (k == "--rounds") o.rounds = std::stoi(v);
    else if (k == "--prompt-len") o.promptLen = std::stoi(v);
    else if (k == "--max-batch") o.maxBatch = std::stoi(v);
    else if (k == "--stream-interval") o.streamInterval = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--load") o.load = v;
    else if (k == "--decode-path") o.decodePath = v;
    else if (k == "--peak") o.peak = v != "off";
    else if (k == "--modes") {
      o.modes.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.modes.push_back(x);
    }
    else if (k == "--levels") {
      o.levels.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) o.levels.push_back(std::stoi(x));
    } else throw std::runtime_error("unknown option " + k);
  }
  if (o.model.empty() || o.lora.empty()) throw std::runtime_error("usage: serve_bench --model DIR --lora DIR [...]");
  return o;
}

// One streaming request; returns completion tokens from the usage chunk (-1 on failure).
int streamOnce(httplib::Client& c, const std::string& model, const std::vector<int>& prompt, int tokens) {
  const json body = {{"model", model}, {"prompt", prompt}, {"max_tokens", tokens}, {"ignore_eos", true},
                     {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  std::string got;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body.dump();
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    got.append(d, n);
    return true;
  };
  auto r = c.send(req);
  const size_t at = got.rfind("\"usage\":");
  if (!r || r->status != 200 || at == std::string::npos) return -1;
  const size_t ct = got.find("\"completion_tokens\":", at);
  return ct == std::string::npos ? -1 : std::atoi(got.c_str() + ct + 20);
}

// Aggregate output tok/s with `streams` clients each sending `rounds` requests.
// Prompt ids lie in [1000, 6000), or within the vocabulary of a smaller model (the demo's).
json runLevel(int port, const std::string& model, const Options& o, int streams, int64_t vocab) {
  const int offset = int(std::min<int64_t>(1000, vocab / 4)), span = int(std::min<int64_t>(5000, vocab / 2));
  std::atomic<long> tokens{0};
  std::atomic<int> failed{0};
  std::mutex cpuMu;
  double clientCpu = 0;  // summed as each client thread ends (a finished thread leaves /proc/self/task)
  std::vector<std::thread> clients;
  const auto t0 = Clock::now();
  for (int s = 0; s < streams; ++s) {
    clients.emplace_back([&, s] {
      pthread_setname_np(pthread_self(), "bench-client");
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(600, 0);
      for (int r = 0; r < o.rounds; ++r) {
        std::vector<int> prompt;
        for (int i = 0; i < o.promptLen; ++i) prompt.push_back(offset + (s * 131 + r * 17 + i * 7) % span);
        const int n = streamOnce(c, model, prompt, o.tokens);
        n < 0 ? failed++ : tokens += n;
      }
      const double cpu = benchsupport::threadCpuSeconds();
      std::lock_guard<std::mutex> lk(cpuMu);
      clientCpu += cpu;
    });
  }
  for (auto& t : clients) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return {{"concurrency", streams}, {"output_tokens", tokens.load()}, {"failed", failed.load()},
          {"duration_s", secs}, {"output_tok_s", tokens.load() / secs}, {"client_cpu_s", clientCpu}};
}

// Where one level's time went (see the header).
json timeSplit(const infer::SchedulerStats& a, const infer::SchedulerStats& b, const std::map<std::string, double>& cpu0,
               const std::map<std::string, double>& cpu1, double clientCpu, double wall, long tokens, int streams,
               const model::ModelConfig& config, const benchsupport::Peaks& peaks) {
  double engine = 0, other = 0;
  for (const auto& [name, seconds] : cpu1) {
    if (name == "bench-client") continue;  // ended threads: counted by the clients themselves
    const auto it = cpu0.find(name);
    const double d = seconds - (it == cpu0.end() ? 0.0 : it->second);
    (name == "crosslab-engine" ? engine : other) += d;
  }
  const auto share = [&](double x, double y) { return wall > 0 ? (y - x) / wall : 0.0; };
  const double decoded = double(std::max<long>(0, tokens - streams));  // rows through decode steps
  const double busy = (b.prefillS - a.prefillS) + (b.decodeS - a.decodeS) + (b.lmHeadS - a.lmHeadS) + (b.sampleS - a.sampleS) +
                      (b.emitS - a.emitS);
  return {{"cpu_s", {{"engine", engine}, {"http_server_and_main", other}, {"client", clientCpu}}},
          {"engine_thread_share_of_wall",
           {{"prefill", share(a.prefillS, b.prefillS)},
            {"decode_forward", share(a.decodeS, b.decodeS)},
            {"fused_matmul", share(a.fusedMatmulS, b.fusedMatmulS)},
            {"fused_lora", share(a.fusedLoraS, b.fusedLoraS)},
            {"fused_attention", share(a.fusedAttentionS, b.fusedAttentionS)},
            {"fused_other", share(a.fusedOtherS, b.fusedOtherS)},
            {"lm_head", share(a.lmHeadS, b.lmHeadS)},
            {"sampling", share(a.sampleS, b.sampleS)},
            {"emit_to_server", share(a.emitS, b.emitS)},
            {"waiting", wall > 0 ? 1.0 - busy / wall : 0.0}}},
          {"rates", benchsupport::decodeRates(a, b, decoded, config, peaks)},
          {"fused_steps", b.fusedSteps - a.fusedSteps},
          {"split_steps", b.splitSteps - a.splitSteps},
          {"op_by_op_steps", b.opByOpSteps - a.opByOpSteps},
          {"decode_paths", b.decodePaths}};
}

std::map<int, double> runMode(const Options& o, bool merged, const benchsupport::Peaks& peaks) {
  infer::SchedulerOptions so;
  so.maxBatch = o.maxBatch;
  so.maxModelLen = o.promptLen + o.tokens + 8;
  so.dtype = o.dtype;
  so.threads = o.threads;
  so.copyWeights = o.load == "copy";
  so.decodePath = o.decodePath;
  serve::ServerOptions opt;
  opt.baseModelId = "base";
  opt.port = 0;
  opt.httpThreads = o.maxBatch * 4 + 64;
  opt.streamInterval = o.streamInterval;
  if (merged) {
    so.mergeAdapter = o.lora;
    opt.mergedAdapter = "adapter";
  } else {
    so.loras = {{"adapter", o.lora}};
  }
  auto engine = infer::BatchScheduler::open(o.model, so);
  serve::OpenAiServer server(*engine, opt);
  const int port = server.bind();
  std::thread serving([&] { server.run(); });
  const int64_t vocab = engine->config().vocabSize;
  Options warm = o;
  warm.tokens = 4;
  warm.rounds = 1;
  runLevel(port, "adapter", warm, 1, vocab);  // warm-up
  std::map<int, double> rates;
  for (int level : o.levels) {
    const infer::SchedulerStats before = engine->stats();
    const auto cpu0 = benchsupport::cpuByThreadName();
    json j = runLevel(port, "adapter", o, level, vocab);
    j["time_split"] = timeSplit(before, engine->stats(), cpu0, benchsupport::cpuByThreadName(), j["client_cpu_s"].get<double>(),
                                j["duration_s"].get<double>(),
                                j["output_tokens"].get<long>(), level * o.rounds, engine->config(), peaks);
    j["mode"] = merged ? "merged" : "runtime";
    j["max_batch_seen"] = engine->stats().maxBatchSeen;
    j["model"] = o.model;
    j["dtype"] = o.dtype;
    std::cout << j.dump() << std::endl;
    rates[level] = j["output_tok_s"].get<double>();
  }
  server.stop();
  serving.join();
  engine->stop();
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  crosslab::util::reexecWithPassiveOpenMpWaits(argv);  // as `crosslab-cli serve` runs (openmp_waits.h)
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const Options o = parse(argc, argv);
    benchsupport::Peaks peaks;
    if (o.peak) {
      at::set_num_threads(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency())));
      const json p = benchsupport::computePeak(o.dtype == "bf16" ? at::kBFloat16 : at::kFloat);
      std::cout << p.dump() << std::endl;
      peaks = benchsupport::Peaks::of(p);
    }
    std::map<std::string, std::map<int, double>> rates;
    for (const auto& mode : o.modes) rates[mode] = runMode(o, mode == "merged", peaks);
    json summary = {{"model", o.model}, {"dtype", o.dtype}};
    for (int level : o.levels)
      for (const auto& [mode, r] : rates) {
        summary["gain_vs_1_" + mode][std::to_string(level)] = r.at(level) / r.at(o.levels.front());
        if (rates.count("merged") && rates.count("runtime"))
          summary["merged_over_runtime"][std::to_string(level)] = rates["merged"].at(level) / rates["runtime"].at(level);
      }
    std::cout << summary.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "serve_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
