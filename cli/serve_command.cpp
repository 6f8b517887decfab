// crosslab-cli serve: the OpenAI-compatible server over the batch scheduler.
#include "cli/commands.h"

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>

#include "backends/serve/engine_stats_log.h"
#include "backends/serve/openai_server.h"
#include "core/infer/batch_scheduler.h"
#include "core/ledger/ledger_text.h"

namespace crosslab::serve {
namespace {

namespace fs = std::filesystem;


// --lora NAME=DIR, repeatable.
std::vector<std::pair<std::string, fs::path>> loraOptions(const cli::Args& args) {
  std::vector<std::pair<std::string, fs::path>> out;
  for (const auto& v : args.values("--lora")) {
    const size_t eq = v.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == v.size()) throw cli::UsageError("--lora takes NAME=DIR, got '" + v + "'");
    out.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    if (!fs::is_directory(out.back().second)) throw std::runtime_error(out.back().second.string() + ": not a directory");
  }
  return out;
}

// SIGINT/SIGTERM are blocked before any thread starts (threads inherit the mask) and
// taken by one waiter thread, which stops the server outside of signal context.
class SignalStopper {
 public:
  SignalStopper() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  void start(OpenAiServer& server) {
    waiter_ = std::thread([this, &server] {
      int sig = 0;
      sigwait(&set_, &sig);
      server.stop();
    });
  }
  ~SignalStopper() {
    if (waiter_.joinable()) {
      pthread_kill(waiter_.native_handle(), SIGTERM);  // wakes sigwait when the server ended by itself
      waiter_.join();
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalStopper(const SignalStopper&) = delete;
  SignalStopper& operator=(const SignalStopper&) = delete;

 private:
  sigset_t set_, old_;
  std::thread waiter_;
};

// MemAvailable from /proc/meminfo, in bytes (0: unknown).
uint64_t memAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kb = 0;
    if (fields >> key >> kb && key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// What the KV cache holds, and a warning when, full, it would not fit the memory available
// now: on the CPU it is resident only as sequences fill it (core/model/huge_pages.h), so a
// server whose cache does not fit starts, and the kernel kills it later, under load.
void describeCache(const infer::SchedulerStats& st, const std::string& device, std::ostream& err) {
  err << "KV cache: " << st.kvCacheRows << " rows x " << st.kvCachePositions << " positions, "
      << ledger::formatBytes(int64_t(st.kvCacheBytes)) << (device == "cpu" ? ", resident as sequences fill it" : "") << std::endl;
  const uint64_t available = device == "cpu" ? memAvailableBytes() : 0;
  if (available && st.kvCacheBytes > available)
    err << "warning: the KV cache, full, is more than the " << ledger::formatBytes(int64_t(available))
        << " of memory available now; lower --max-batch, --prefill-batch or --max-model-len, or the server may be killed as it fills"
        << std::endl;
}

int runServe(const cli::Args& args, cli::Context& ctx) {
  args.expectPositionals(0, 0);
  const auto model = args.value("--model");
  if (!model) throw cli::UsageError("--model DIR is required");
  if (!fs::is_directory(*model)) throw std::runtime_error(*model + ": not a directory");
  infer::SchedulerOptions so;
  so.maxBatch = int(args.integer("--max-batch", 32, 1, 1024));
  so.maxModelLen = int(args.integer("--max-model-len", 0, 1, 1 << 20));
  // The scheduler's own defaults (batch_bench takes the same ones).
  so.prefillChunk = int(args.integer("--prefill-chunk", so.prefillChunk, 1, 1 << 16));
  so.stepwisePrefill = int(args.integer("--stepwise-prefill", so.stepwisePrefill, 0, 1 << 16));
  so.prefillBatch = int(args.integer("--prefill-batch", so.prefillBatch, 1, 1024));
  so.decodePath = args.choice("--decode-path", {"auto", "fused", "fused-split", "op-by-op"}, "auto");
  so.threads = int(args.integer("--threads", 0, 0, 1024));
  so.dtype = args.value("--dtype").value_or("f32");
  if (so.dtype != "f32" && so.dtype != "bf16") throw cli::UsageError("--dtype must be bf16 or f32");
  const std::string load = args.value("--load").value_or("map");
  if (load != "map" && load != "copy") throw cli::UsageError("--load must be map or copy");
  so.copyWeights = load == "copy";
  so.loras = loraOptions(args);

  ServerOptions opt;
  opt.host = args.value("--host").value_or("127.0.0.1");
  opt.port = int(args.integer("--port", 8000, 0, 65535));
  opt.baseModelId = args.value("--served-model-name").value_or(fs::path(*model).lexically_normal().filename().string());
  if (opt.baseModelId.empty()) opt.baseModelId = fs::absolute(*model).lexically_normal().parent_path().filename().string();
  opt.httpThreads = int(args.integer("--max-connections", defaultHttpThreads(so.maxBatch), 1, 65536));
  opt.streamInterval = int(args.integer("--stream-interval", 1, 1, 4096));
  opt.lowPriorityWriter = args.choice("--writer-priority", {"low", "normal"}, "low") == "low";
  // Lines from the server's threads (the writer's notices, the engine's stats) one at a time.
  std::mutex errMu;
  const auto say = [&errMu, &err = ctx.err](const std::string& line) {
    std::lock_guard<std::mutex> lk(errMu);
    err << line << std::endl;
  };
  opt.notice = say;
  const double statsEvery = args.has("--disable-log-stats") ? 0 : args.number("--log-stats-interval", 10, 0, 86400);
  if (const auto merge = args.value("--merge")) {
    // --merge NAME serves the --lora NAME adapter merged into the weights, and only it.
    if (so.loras.size() != 1 || so.loras[0].first != *merge)
      throw cli::UsageError("--merge NAME needs exactly one --lora NAME=DIR with the same NAME");
    so.mergeAdapter = so.loras[0].second;
    so.loras.clear();
    opt.mergedAdapter = *merge;
  }
  if (const auto var = args.value("--api-key-env")) {
    const char* key = std::getenv(var->c_str());
    if (!key || !*key) throw std::runtime_error("--api-key-env " + *var + ": the variable is not set or empty");
    opt.apiKey = key;
  }

  SignalStopper stopper;
  auto engine = infer::BatchScheduler::open(*model, so);
  describeCache(engine->stats(), so.device, ctx.err);
  OpenAiServer server(*engine, opt);
  const int port = server.bind();
  stopper.start(server);
  ctx.out << "listening on http://" << opt.host << ":" << port << std::endl;
  EngineStatsLog stats(*engine, std::chrono::milliseconds(int64_t(statsEvery * 1000)), say);
  server.run();
  engine->stop();
  return 0;
}

}  // namespace

void addServeCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"serve",
                      "--model DIR [--served-model-name NAME] [--lora NAME=DIR ...] [--merge NAME] [--host 127.0.0.1] "
                      "[--port 8000] [--max-batch N] [--max-model-len N] [--dtype bf16|f32] [--max-connections N] [--stream-interval N] [--writer-priority low|normal] [--log-stats-interval S | --disable-log-stats] [--api-key-env VAR]",
                      "serve a model over the OpenAI-compatible API with continuous batching",
                      {{"--model", true, "Hugging Face checkpoint folder", true},
                       {"--served-model-name", true, "the base model's id (default: the folder's name)"},
                       {"--lora", true, "NAME=DIR: a PEFT adapter applied per request (repeatable)"},
                       {"--merge", true, "serve the --lora NAME adapter merged into the weights"},
                       {"--host", true, "address to bind (default 127.0.0.1)"},
                       {"--port", true, "port (default 8000; 0 = any free port)"},
                       {"--max-batch", true, "sequences decoded together (default 32)"},
                       {"--max-model-len", true, "prompt + completion tokens per request"},
                       {"--prefill-chunk", true, "prompt tokens per prefill step, shared by the requests prefilled together (default 128)"},
                       {"--prefill-batch", true, "new requests prefilled together (default 16)"},
                       {"--stepwise-prefill", true, "prefill chunks of up to N positions per request run as fused decode steps, one position at a time, where the model's layers fit in cache (default 32; 0 = always one forward per chunk)"},
                       {"--decode-path", true, "auto (default: the fastest of fused, fused-split and op-by-op, measured per batch size), fused, fused-split (rows split over threads) or op-by-op"},
                       {"--threads", true, "compute threads (default: every core)"},
                       {"--dtype", true, "bf16 or f32 (default f32)"},
                       {"--load", true, "map (default) or copy: weights from the file's memory map, or read into memory"},
                       {"--max-connections", true, "HTTP connections served at once (default max(256, 4 x max batch + 64))"},
                       {"--stream-interval", true, "tokens per streamed write after the first (default 1: each token as it comes; larger: fewer writes and reads per token, burstier arrival; none held over 50 ms)"},
                       {"--writer-priority", true, "the thread writing the streams: low (default: nice 19 while the cores are the server's; it falls behind the steps and sends several tokens per write, more tok/s and a longer tail of gaps between tokens) or normal (the process's nice value: each token as its step ends)"},
                       {"--log-stats-interval", true, "seconds between the engine's lines on stderr (default 10, as vLLM's: prompt and generation tok/s, running and waiting requests, KV rows in use, decode steps' batch and cost; none while idle; 0: none)"},
                       {"--disable-log-stats", false, "no engine lines (vLLM's flag)"},
                       {"--api-key-env", true, "environment variable holding the API key"}},
                      runServe});
}

}  // namespace crosslab::serve
