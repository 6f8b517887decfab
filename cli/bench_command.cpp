// crosslab-cli bench (a concurrency sweep against an OpenAI-compatible endpoint) and
// crosslab-cli bench standin (the loopback stand-in server, for demos and checks).
#include "cli/commands.h"

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/bench/standin_server.h"
#include "backends/bench/throughput_sweep.h"
#include "core/bench/bench_store.h"
#include "core/ledger/life_recorder.h"
#include "core/venues/venue_store.h"

namespace crosslab::backends {

namespace {

using cli::Args;
using cli::UsageError;
using nlohmann::json;

std::atomic<bool> gStop{false};
void onBenchStopSignal(int) { gStop = true; }  // internal linkage: one per command

// SIGINT / SIGTERM end the current level cleanly (finished levels are kept).
struct StopSignals {
  struct sigaction oldInt {}, oldTerm {};
  StopSignals() {
    gStop = false;
    struct sigaction sa {};
    sa.sa_handler = onBenchStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &oldInt);
    sigaction(SIGTERM, &sa, &oldTerm);
  }
  ~StopSignals() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }
};

double toDouble(const std::string& name, const std::string& text) { return cli::parseNumber(name, text); }

int toInt(const std::string& name, const std::string& text) {
  const double v = toDouble(name, text);
  if (v != static_cast<int>(v)) throw UsageError(name + " needs a whole number, not '" + text + "'");
  return static_cast<int>(v);
}

std::vector<int> parseLevels(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(toInt("--concurrency", item));
  if (out.empty()) throw UsageError("--concurrency needs a list like 1,8,32,64");
  return out;
}

std::string shellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=@+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command as run: /proc/self/cmdline when this process is `crosslab-cli bench`, else rebuilt from the options.
std::string exactCommand(const Args& args, const std::vector<cli::OptionSpec>& specs) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
  // This process is `crosslab-cli bench …` itself (not another command running bench in-process, as the demo does).
  if (argv.size() > 1 && std::filesystem::path(argv[0]).filename() == "crosslab-cli" && argv[1] == "bench") {
    std::string cmd = "crosslab-cli";
    for (size_t i = 1; i < argv.size(); ++i) cmd += " " + shellQuote(argv[i]);
    return cmd;
  }
  std::string cmd = "crosslab-cli bench";
  for (const auto& s : specs)
    if (args.has(s.name)) cmd += " " + s.name + (s.takesValue ? " " + shellQuote(*args.value(s.name)) : "");
  return cmd;
}

SweepOptions optionsFrom(const Args& a) {
  SweepOptions o;
  if (!a.has("--url") || !a.has("--model")) throw UsageError("--url and --model are required");
  o.url = *a.value("--url");
  o.model = *a.value("--model");
  o.endpoint = a.value("--endpoint").value_or("completions");
  if (a.has("--concurrency")) o.levels = parseLevels(*a.value("--concurrency"));
  if (a.has("--num-prompts") && a.has("--duration")) throw UsageError("give --num-prompts or --duration, not both");
  if (a.has("--num-prompts")) o.numPrompts = toInt("--num-prompts", *a.value("--num-prompts"));
  if (a.has("--duration")) o.durationS = toDouble("--duration", *a.value("--duration"));
  if (a.has("--input-len")) o.inputLen = toInt("--input-len", *a.value("--input-len"));
  if (a.has("--output-len")) o.outputLen = toInt("--output-len", *a.value("--output-len"));
  o.ignoreEos = a.has("--ignore-eos");
  const std::string rate = a.value("--request-rate").value_or("inf");
  if (rate != "inf") o.rate = toDouble("--request-rate", rate);
  if (a.has("--burstiness")) o.burstiness = toDouble("--burstiness", *a.value("--burstiness"));
  if (a.has("--warmup")) o.warmup = toInt("--warmup", *a.value("--warmup"));
  if (a.has("--price-per-hour")) o.pricePerHour = toDouble("--price-per-hour", *a.value("--price-per-hour"));
  if (a.has("--timeout")) o.timeoutS = toDouble("--timeout", *a.value("--timeout"));
  if (a.has("--collapse-fraction")) o.collapseFraction = toDouble("--collapse-fraction", *a.value("--collapse-fraction"));
  if (a.has("--stall-seconds")) o.stallS = toDouble("--stall-seconds", *a.value("--stall-seconds"));
  if (a.has("--watch-window")) o.watchWindowS = toDouble("--watch-window", *a.value("--watch-window"));
  o.keepAlive = !a.has("--no-keep-alive");
  o.serverMetrics = !a.has("--no-server-metrics");
  if (a.has("--seed")) o.seed = static_cast<std::uint64_t>(toInt("--seed", *a.value("--seed")));
  if (a.has("--api-key-env")) {
    const std::string var = *a.value("--api-key-env");
    const char* key = std::getenv(var.c_str());
    if (!key || !*key) throw std::runtime_error("environment variable " + var + " (--api-key-env) is not set");
    o.authorization = std::string("Bearer ") + key;
  }
  return o;
}

std::string utcStamp() {  // vLLM's "date": %Y%m%d-%H%M%S
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Rewrites the whole JSON Lines file through a temporary + rename: never half-written.
void writeJsonLines(const std::string& path, const std::vector<json>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    for (const auto& l : lines) out << l.dump() << "\n";
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string fixed(double v, int decimals) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(decimals) << v;
  return s.str();
}

// Prints progress (human lines, or JSON Lines with --progress) and saves each level.
class CliListener : public SweepListener {
 public:
  CliListener(std::ostream& out, bool jsonProgress) : out_(out), json_(jsonProgress) {}
  std::function<void(const bench::LevelResult&)> onLevel;

  void onLevelStart(int c, int planned) override {
    lastTick_ = -1;
    if (json_)
      emit({{"event", "level_start"}, {"concurrency", c}, {"planned", planned}});
    else
      out_ << "level c=" << c << ": " << (planned ? std::to_string(planned) + " requests" : "timed") << " …\n"
           << std::flush;
  }
  void onTick(int c, const LiveTick& t, double agg, double perStream) override {
    if (!json_ || t.elapsedS - lastTick_ < 0.2) return;  // ≤ 5 lines/s for the GUI
    lastTick_ = t.elapsedS;
    emit({{"event", "tick"}, {"concurrency", c}, {"t", t.elapsedS}, {"aggregate_tok_s", agg},
          {"per_stream_tok_s", perStream}, {"issued", t.issued}, {"done", t.done}, {"failed", t.failed},
          {"planned", t.planned}, {"in_flight", t.inFlight}, {"decoding", t.decoding}});
  }
  void onRequestDone(int c, const bench::RequestRecord& r) override {
    if (r.success) {  // the sweep's first token: when the first successful stream's first chunk came
      const std::lock_guard lock(firstMutex_);
      const double at = ledger::epochNow() - std::max(0.0, r.latencyS - r.ttftS);
      if (!firstToken_ || at < *firstToken_) firstToken_ = at;
    }
    if (json_)
      emit({{"event", "request"}, {"concurrency", c}, {"ok", r.success}, {"t", r.startS + r.latencyS},
            {"ttft_ms", r.ttftS * 1000}, {"error", r.error}});
  }
  // Epoch seconds of the first token any request of the sweep received; none when none did.
  std::optional<double> firstToken() const {
    const std::lock_guard lock(firstMutex_);
    return firstToken_;
  }
  void onLevelDone(const bench::LevelResult& l) override {
    if (onLevel) onLevel(l);
    if (json_) {
      json j = levelToJson(l);
      for (const char* big : {"input_lens", "output_lens", "ttfts", "errors"}) j.erase(big);
      emit({{"event", "level"}, {"result", j}});
      return;
    }
    out_ << "  c=" << l.context.maxConcurrency << "  completed " << l.completed << "  failed " << l.failed
         << "  output " << fixed(l.outputThroughput, 1) << " tok/s  per-stream "
         << (l.perStreamMeasured ? fixed(l.perStreamTokS, 1) + " tok/s" : std::string("n/a (every reply read at once)"))
         << "  TTFT p50 " << fixed(l.ttft.medianMs, 1) << " p99 " << fixed(l.ttft.p99Ms, 1) << " ms  TPOT p50 "
         << fixed(l.tpot.medianMs, 2) << " p99 " << fixed(l.tpot.p99Ms, 2) << " ms"
         << (l.usdPerMOutputTokens ? "  $" + fixed(*l.usdPerMOutputTokens, 3) + "/M" : "")
         << "  tokens from " << l.outputTokensSource << "\n";
    if (l.server) out_ << "  server: " << bench::describeSweep(*l.server, l.totalOutputTokens) << "\n";
    for (const auto& r : l.requests)
      if (!r.success) {
        out_ << "  first failure: " << r.error << "\n";
        break;
      }
    if (!l.collapse.empty()) out_ << "  COLLAPSE: " << l.collapse << "\n";
    out_ << std::flush;
  }
  void emit(const json& j) { out_ << j.dump() << "\n" << std::flush; }

 private:
  std::ostream& out_;
  bool json_;
  double lastTick_ = -1;
  mutable std::mutex firstMutex_;
  std::optional<double> firstToken_;
};

std::vector<cli::OptionSpec> benchOptions() {
  return {{"--url", true, "endpoint base URL, e.g. http://127.0.0.1:8000 (http only; tunnel remote boxes)", true},
          {"--model", true, "model or adapter id sent in requests", true},
          {"--endpoint", true, "completions (default) or chat"},
          {"--concurrency", true, "levels, default 1,8,32,64"},
          {"--num-prompts", true, "requests per level (default max(8, 2 x concurrency))"},
          {"--duration", true, "seconds per level instead of a request count"},
          {"--input-len", true, "prompt length in words (~tokens), default 128"},
          {"--output-len", true, "max output tokens per request, default 512"},
          {"--ignore-eos", false, "ask the server to ignore EOS (vLLM extension)"},
          {"--request-rate", true, "requests/s or inf (default): gamma gaps, see --burstiness"},
          {"--burstiness", true, "gamma shape, 1 = Poisson (default)"},
          {"--warmup", true, "requests sent and discarded before the first level (concurrently, up to the widest level)"},
          {"--price-per-hour", true, "USD per hour of the venue, for $/M output tokens"},
          {"--label", true, "row name in the lab's tables (venue / method)"},
          {"--lab", true, "lab folder to record the sweep in"},
          {"--box", true, "the lab's box this endpoint runs on (recorded with the sweep; its price by default)"},
          {"--save-result", true, "JSON Lines file: one vLLM-style object per level"},
          {"--save-detailed", false, "also write per-request ITLs into --save-result"},
          {"--api-key-env", true, "environment variable holding the API key (never logged or stored)"},
          {"--timeout", true, "seconds without data before a request fails, default 120"},
          {"--collapse-fraction", true, "collapse: per stream under this x the first level's, no gain together; default 0.1"},
          {"--stall-seconds", true, "a decoding stream silent this long stops the sweep, default 30"},
          {"--watch-window", true, "seconds over which live per-stream tok/s is judged, default 5"},
          {"--seed", true, "seed for prompts and arrival times"},
          {"--no-keep-alive", false, "a new connection per request (default: kept for the next, as vLLM's client)"},
          {"--no-server-metrics", false, "do not read the server's /metrics around each level (default: read, as the key \"server\")"},
          {"--progress", false, "print JSON Lines progress events (for the GUI)"},
          {"--json", false, "print the sweep as one JSON object (levels with vLLM's keys); progress on stderr"}};
}

int runBench(const Args& args, cli::Context& ctx) {
  args.expectPositionals(0, 0);
  if (args.has("--json") && args.has("--progress")) throw UsageError("--json or --progress, not both");
  auto options = optionsFrom(args);
  // --box NAME: the row names the box measured (and takes its price unless one is given).
  std::optional<venues::BoxRow> box;
  if (const auto name = args.value("--box")) {
    if (!args.has("--lab")) throw UsageError("--box needs --lab (the lab that records the box)");
    auto boxLab = store::LabStore::open(*args.value("--lab"));
    box = venues::VenueStore(boxLab).activeBox(*name);
    if (!box) throw std::runtime_error("the lab has no box named '" + *name + "'");
    if (!args.has("--price-per-hour") && box->pricePerHour) options.pricePerHour = *box->pricePerHour;
  }
  ThroughputSweep sweep(options);
  const auto& o = sweep.options();
  const std::string label = args.value("--label").value_or(o.model + " @ " + o.url);
  if (args.has("--save-result")) {  // fail now, not after the first level has run
    const std::string probe = *args.value("--save-result") + ".tmp";
    if (!std::ofstream(probe)) throw std::runtime_error("cannot write --save-result " + *args.value("--save-result"));
    std::filesystem::remove(probe);
  }
  std::optional<store::LabStore> lab;
  std::optional<std::int64_t> benchId;
  if (args.has("--lab")) {
    lab.emplace(store::LabStore::open(*args.value("--lab")));
    bench::BenchmarkHeader header{label, o.url, o.model, o.endpoint, exactCommand(args, benchOptions()), o.pricePerHour};
    if (box) {
      header.boxId = box->id;
      header.venueId = box->venueId;
    }
    benchId = bench::BenchStore(*lab).begin(header);
  }
  // On a box: the sweep is a work item of its life (the ledger's compute minutes).
  std::optional<std::int64_t> workId;
  if (box) {
    workId = ledger::LifeRecorder(*lab).workStarted(box->id, ledger::WorkKind::Bench, "sweep " + label,
                                                    ledger::epochNow(), {std::nullopt, benchId});
  }
  std::vector<json> lines;
  // With --json, stdout carries only the result: the human progress lines go to stderr.
  CliListener listener(args.has("--json") ? ctx.err : ctx.out, args.has("--progress"));
  listener.onLevel = [&](const bench::LevelResult& l) {
    if (lab) bench::BenchStore(*lab).saveLevel(*benchId, l);  // a level that completed nothing is not saved
    if (args.has("--save-result") && (l.completed > 0 || !l.collapse.empty())) {
      json j = levelToJson(l, args.has("--save-detailed"));
      j["date"] = utcStamp();
      j["label"] = label;
      j["url"] = o.url;
      lines.push_back(std::move(j));
      writeJsonLines(*args.value("--save-result"), lines);
    }
  };
  StopSignals signals;
  SweepResult result;
  try {
    result = sweep.run(&listener, &gStop);
  } catch (const std::exception& e) {  // the row says so rather than "running" forever
    if (lab) bench::BenchStore(*lab).end(*benchId, bench::SweepStatus::Failed, e.what());
    if (workId) ledger::LifeRecorder(*lab).workEnded(*workId, ledger::WorkStatus::Failed, ledger::epochNow(), e.what());
    throw;
  }
  const bool stoppedByUser = gStop.load();
  int completed = 0;
  for (const auto& l : result.levels) completed += l.completed;
  const bool failed = !result.failure.empty() && !stoppedByUser;
  if (workId) {  // the sweep as work of the box's life (ledger)
    const auto work = failed || completed == 0                       ? ledger::WorkStatus::Failed
                      : stoppedByUser || !result.stoppedReason.empty() ? ledger::WorkStatus::Stopped
                                                                       : ledger::WorkStatus::Finished;
    ledger::LifeRecorder(*lab).workEnded(*workId, work, ledger::epochNow(),
                                         failed ? result.failure : result.stoppedReason);
  }
  // The box life's first token (the timeline's "first token" milestone, once per life): when
  // the first measured stream of this sweep received its first chunk.
  if (box)
    if (const auto first = listener.firstToken())
      venues::VenueStore(*lab).noteLifeMilestone(*box, venues::milestone::kFirstToken, "bench sweep " + label,
                                                 venues::formatUtc(*first));
  if (lab) {
    const auto status = failed ? bench::SweepStatus::Failed : stoppedByUser ? bench::SweepStatus::Stopped : bench::SweepStatus::Done;
    bench::BenchStore(*lab).end(*benchId, status, failed ? result.failure : result.stoppedReason);
  }
  const std::string knee = result.knee                    ? result.knee->description
                           : result.stoppedReason.empty() ? "not reached (aggregate still growing)"
                                                          : "not reached before the sweep stopped";
  if (args.has("--json")) {
    json levels = json::array();
    for (const auto& l : result.levels) {
      json j = levelToJson(l);
      for (const char* big : {"input_lens", "output_lens", "ttfts", "itls", "errors"}) j.erase(big);
      levels.push_back(std::move(j));
    }
    ctx.out << json{{"label", label},
                    {"url", o.url},
                    {"model", o.model},
                    {"levels", levels},
                    {"knee", result.knee ? json(result.knee->concurrency) : json()},
                    {"knee_description", knee},
                    {"stopped", result.stoppedReason},
                    {"server_metrics", result.serverMetrics.empty() ? json() : json(result.serverMetrics)},
                    {"benchmark_id", benchId ? json(*benchId) : json()}}
                   .dump()
            << "\n";
  } else if (args.has("--progress")) {
    listener.emit({{"event", "sweep"}, {"knee", result.knee ? json(result.knee->concurrency) : json()},
                   {"knee_description", knee}, {"stopped", result.stoppedReason}, {"failed", failed},
                   {"benchmark_id", benchId ? json(*benchId) : json()}});
  } else {
    ctx.out << "saturation: " << knee << "\n"
            << (result.stoppedReason.empty() ? "" : "sweep stopped: " + result.stoppedReason + "\n")
            << (result.serverMetrics.empty() ? "" : "server's /metrics: " + result.serverMetrics + "\n")
            << (benchId ? "recorded as benchmark " + std::to_string(*benchId) + (failed ? " (failed)" : "") + "\n" : "");
  }
  if (failed) return ctx.err << "crosslab-cli bench: " << result.failure << "\n", 1;
  if (completed == 0) {
    for (const auto& l : result.levels)
      for (const auto& r : l.requests)
        if (!r.error.empty()) return ctx.err << "crosslab-cli bench: no request completed: " << r.error << "\n", 1;
    throw std::runtime_error("no request completed");
  }
  return 0;
}

int runStandin(const Args& args, cli::Context& ctx) {
  StandinConfig cfg;
  cfg.model = args.value("--model").value_or("standin");
  if (args.has("--interval-ms")) cfg.intervalS = toDouble("--interval-ms", *args.value("--interval-ms")) / 1000.0;
  if (args.has("--collapse-above")) cfg.collapseAboveStreams = toInt("--collapse-above", *args.value("--collapse-above"));
  cfg.roundRobin = args.has("--round-robin");
  cfg.tokensPerFrame = int(args.integer("--tokens-per-frame", 1, 1, 4096));  // serve's --stream-interval range
  cfg.maxLifetimeS = args.has("--seconds") ? toDouble("--seconds", *args.value("--seconds")) : 600.0;
  if (args.has("--port")) cfg.port = toInt("--port", *args.value("--port"));
  StandinServer server(cfg);
  server.start();
  ctx.out << "stand-in server for model '" << cfg.model << "' on " << server.baseUrl() << " for "
          << cfg.maxLifetimeS << " s (Ctrl+C stops)\n" << std::flush;
  StopSignals signals;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg.maxLifetimeS);
  while (!gStop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server.stop();
  ctx.out << "served " << server.generationRequests() << " generation requests\n";
  return 0;
}

}  // namespace

void addBenchCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"bench",
                      "--url URL --model NAME [--endpoint completions|chat] [--concurrency 1,8,32,64] "
                      "[--num-prompts N | --duration S] [--input-len N] [--output-len 512] [--ignore-eos] "
                      "[--request-rate inf|R] [--burstiness B] [--warmup N] [--price-per-hour USD] [--label TEXT] "
                      "[--lab LAB] [--save-result FILE] [--api-key-env VAR] [--json]",
                      "throughput sweep of an OpenAI-compatible endpoint (vLLM bench serve metrics)",
                      benchOptions(), runBench});
  commands.push_back({"bench standin",
                      "[--model NAME] [--interval-ms MS] [--round-robin] [--tokens-per-frame N] [--seconds S] "
                      "[--collapse-above N] [--port P]",
                      "run the loopback stand-in streaming server (127.0.0.1, a free port unless --port)",
                      {{"--model", true, "model id it answers to (default standin)"},
                       {"--interval-ms", true, "gap between streamed chunks (default 0: as fast as possible)"},
                       {"--round-robin", false, "unpaced: one chunk per stream per pass, as a server ending a decode step "
                                                "(default: each stream fed until its socket is full)"},
                       {"--tokens-per-frame", true, "tokens each chunk stands for (a server's stream interval; default 1)"},
                       {"--seconds", true, "stop after this long (default 600)"},
                       {"--collapse-above", true, "with more streams than this, decode slows to 5 tok/s (demo)"},
                       {"--port", true, "listen on this loopback port (a server on a box reached through a tunnel)"}},
                      runStandin});
}

}  // namespace crosslab::backends
