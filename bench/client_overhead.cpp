// Client overhead of `crosslab-cli bench`'s streaming client (issue #5), two figures:
//  1. throughput: the stand-in server (its own core) streams pre-made SSE chunks as fast
//     as the sockets take them to N concurrent streams; the client runs pinned to one
//     core; we print chunks/s (wall) and chunks per client-CPU-second.
//  2. timestamp error: the server paces chunks and records when each was handed to
//     send(); the client's TTFT/ITL-derived arrival times are compared with those send
//     times on the same CLOCK_MONOTONIC (p50 / p99 / max).
// One JSON line per figure. Usage: bench_client_overhead [--streams 64] [--tokens 20000]
//   [--frames-per-write 8] [--interval-ms 2] [--paced-tokens 500] [--client-cpu 0|-1]
#include <pthread.h>
#include <unistd.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/bench/standin_server.h"
#include "backends/bench/stream_client.h"
#include "core/bench/endpoint_url.h"

using namespace crosslab;

namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int argInt(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

std::string body(int tokens) {
  return nlohmann::json{{"model", "standin"}, {"prompt", "the of and"}, {"max_tokens", tokens}, {"stream", true},
                        {"stream_options", {{"include_usage", true}}}}
      .dump();
}

backends::LevelPlan plan(int streams, int tokens, const std::string& prefix) {
  backends::LevelPlan p;
  p.concurrency = streams;
  p.numRequests = streams;
  p.bodies = {body(tokens)};
  p.inputLen = 3;
  p.requestIdPrefix = prefix;
  return p;
}

void throughput(int streams, int tokens, int framesPerWrite, int serverCpu) {
  backends::StandinConfig cfg;
  cfg.framesPerWrite = framesPerWrite;
  cfg.cpu = serverCpu;
  backends::StandinServer server(cfg);
  server.start();
  backends::ClientConfig cc;
  cc.endpoint = bench::parseEndpointUrl(server.baseUrl(), "completions");
  backends::StreamClient client(cc);
  const double cpu0 = threadCpuSeconds();
  const auto run = client.runLevel(plan(streams, tokens, "tp"), nullptr, nullptr);
  const double cpu = threadCpuSeconds() - cpu0;
  std::int64_t chunks = 0;
  int failed = 0;
  for (const auto& r : run.records) {
    chunks += r.choiceChunks;
    failed += !r.success;
  }
  std::printf("%s\n", nlohmann::json{{"figure", "client_chunks_per_s"},
                                     {"streams", streams},
                                     {"chunks", chunks},
                                     {"failed_requests", failed},
                                     {"wall_s", run.durationS},
                                     {"chunks_per_s_wall", chunks / run.durationS},
                                     {"client_cpu_s", cpu},
                                     {"chunks_per_client_cpu_s", chunks / cpu},
                                     {"server_frames_per_write", framesPerWrite},
                                     {"goal_chunks_per_s", 200000}}
                          .dump()
                          .c_str());
}

void timestampError(int streams, int tokens, double intervalS, int serverCpu) {
  backends::StandinConfig cfg;
  cfg.intervalS = intervalS;
  cfg.recordSendTimes = true;
  cfg.cpu = serverCpu;
  backends::StandinServer server(cfg);
  server.start();
  backends::ClientConfig cc;
  cc.endpoint = bench::parseEndpointUrl(server.baseUrl(), "completions");
  backends::StreamClient client(cc);
  const auto run = client.runLevel(plan(streams, tokens, "ts"), nullptr, nullptr);
  const auto sent = server.sendTimes();
  std::vector<double> errs, ttftErrs;
  for (size_t i = 0; i < run.records.size(); ++i) {
    const auto& r = run.records[i];
    const auto it = sent.find("ts-" + std::to_string(i));
    if (!r.success || it == sent.end()) continue;
    double t = run.startMonoS + r.startS + r.ttftS;  // arrival of chunk 0, rebuilt from TTFT
    ttftErrs.push_back(t - it->second[0]);
    errs.push_back(t - it->second[0]);
    for (size_t k = 0; k < r.itlS.size() && k + 1 < it->second.size(); ++k)
      errs.push_back((t += r.itlS[k]) - it->second[k + 1]);  // rebuilt from the ITLs
  }
  auto pct = [](std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1))] * 1e3;
  };
  std::printf("%s\n", nlohmann::json{{"figure", "client_timestamp_error_ms"},
                                     {"streams", streams},
                                     {"chunks", errs.size()},
                                     {"chunks_per_s_offered", streams / intervalS},
                                     {"p50_ms", pct(errs, 50)},
                                     {"p90_ms", pct(errs, 90)},
                                     {"within_1ms", static_cast<double>(std::count_if(errs.begin(), errs.end(),
                                                                                      [](double e) { return e <= 1e-3; })) /
                                                        static_cast<double>(std::max<size_t>(1, errs.size()))},
                                     {"min_ms", pct(errs, 0)},
                                     {"p99_ms", pct(errs, 99)},
                                     {"max_ms", pct(errs, 100)},
                                     {"ttft_p99_ms", pct(ttftErrs, 99)},
                                     {"ttft_max_ms", pct(ttftErrs, 100)},
                                     {"goal_ms", 1.0}}
                          .dump()
                          .c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const int streams = argInt(argc, argv, "--streams", 64);
  const int tokens = argInt(argc, argv, "--tokens", 20000);
  const int framesPerWrite = argInt(argc, argv, "--frames-per-write", 8);
  const int intervalMs = argInt(argc, argv, "--interval-ms", 2);
  const int pacedTokens = argInt(argc, argv, "--paced-tokens", 500);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int clientCpu = argInt(argc, argv, "--client-cpu", 0);  // -1: let the scheduler choose
  const int serverCpu = cpus > 1 && clientCpu >= 0 ? (clientCpu + 1) % static_cast<int>(cpus) : -1;
  if (clientCpu >= 0) pinTo(clientCpu);  // the client: one core
  throughput(streams, tokens, framesPerWrite, serverCpu);
  timestampError(streams, pacedTokens, intervalMs / 1000.0, serverCpu);
  return 0;
}
