// Server batching gain: aggregate output tok/s of `crosslab-cli serve`'s stack (batch
// scheduler + OpenAI server, in process, on a loopback port) at several concurrency levels,
// for an adapter applied at run time vs merged into the weights. The client is a plain
// multi-threaded streaming client: each stream sends --rounds requests back to back
// (ignore_eos, fixed output length) and counts tokens from the usage chunk.
//
//   serve_bench --model DIR --lora DIR [--levels 1,8,32] [--tokens 64] [--rounds 2]
//               [--prompt-len 32] [--dtype f32|bf16] [--max-batch 32]
// Prints one JSON line per (mode, level) and a summary line with the ratios.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "backends/serve/openai_server.h"
#include "core/infer/batch_scheduler.h"

using namespace crosslab;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string model, lora, dtype = "f32";
  std::vector<int> levels = {1, 8, 32};
  int tokens = 64, rounds = 2, promptLen = 32, maxBatch = 32;
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
  std::vector<std::thread> clients;
  const auto t0 = Clock::now();
  for (int s = 0; s < streams; ++s) {
    clients.emplace_back([&, s] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(600, 0);
      for (int r = 0; r < o.rounds; ++r) {
        std::vector<int> prompt;
        for (int i = 0; i < o.promptLen; ++i) prompt.push_back(offset + (s * 131 + r * 17 + i * 7) % span);
        const int n = streamOnce(c, model, prompt, o.tokens);
        n < 0 ? failed++ : tokens += n;
      }
    });
  }
  for (auto& t : clients) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return {{"concurrency", streams}, {"output_tokens", tokens.load()}, {"failed", failed.load()},
          {"duration_s", secs}, {"output_tok_s", tokens.load() / secs}};
}

std::map<int, double> runMode(const Options& o, bool merged) {
  infer::SchedulerOptions so;
  so.maxBatch = o.maxBatch;
  so.maxModelLen = o.promptLen + o.tokens + 8;
  so.dtype = o.dtype;
  serve::ServerOptions opt;
  opt.baseModelId = "base";
  opt.port = 0;
  opt.httpThreads = o.maxBatch * 4 + 64;
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
  runLevel(port, "adapter", Options{o.model, o.lora, o.dtype, {}, 4, 1, o.promptLen, o.maxBatch}, 1, vocab);  // warm-up
  std::map<int, double> rates;
  for (int level : o.levels) {
    json j = runLevel(port, "adapter", o, level, vocab);
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
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const Options o = parse(argc, argv);
    const auto merged = runMode(o, true);
    const auto runtime = runMode(o, false);
    json summary = {{"model", o.model}, {"dtype", o.dtype}};
    for (int level : o.levels) {
      summary["gain_vs_1_merged"][std::to_string(level)] = merged.at(level) / merged.at(o.levels.front());
      summary["gain_vs_1_runtime"][std::to_string(level)] = runtime.at(level) / runtime.at(o.levels.front());
      summary["merged_over_runtime"][std::to_string(level)] = merged.at(level) / runtime.at(level);
    }
    std::cout << summary.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "serve_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
