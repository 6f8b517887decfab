// The streaming client against the loopback stand-in server: vLLM-shaped streams
// (completions and chat, with and without usage), every failure mode recorded as a
// failed request with its reason, the stop flag and the observer's abort, client
// timestamps that never precede the server's send times, and connections kept between
// requests (and not kept where the server closes them).
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/bench/standin_server.h"
#include "backends/bench/stream_client.h"
#include "core/bench/endpoint_url.h"
#include "core/bench/level_metrics.h"
#include "core/bench/request_schedule.h"

using namespace crosslab;
using backends::StandinFault;

namespace {

std::string body(const std::string& model, int maxTokens, bool chat, bool usage) {
  nlohmann::json j = {{"model", model}, {"stream", true}, {"ignore_eos", true}};
  if (chat)
    j["messages"] = {{{"role", "user"}, {"content", "the of and to in"}}};
  else
    j["prompt"] = "the of and to in";
  j[chat ? "max_completion_tokens" : "max_tokens"] = maxTokens;
  if (usage) j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

backends::ClientConfig clientFor(const backends::StandinServer& server, const std::string& kind,
                                 double idleTimeoutS = 30) {
  backends::ClientConfig c;
  c.endpoint = bench::parseEndpointUrl(server.baseUrl(), kind);
  c.idleTimeoutS = idleTimeoutS;
  return c;
}

backends::LevelPlan plan(int concurrency, int n, std::string b) {
  backends::LevelPlan p;
  p.concurrency = concurrency;
  p.numRequests = n;
  p.bodies = {std::move(b)};
  p.inputLen = 5;
  return p;
}

// Aborts the level once `after` requests are done; counts what it saw.
struct AbortAfter : backends::LevelObserver {
  int after = 1 << 30;
  int done = 0, ticks = 0;
  std::string onTick(const backends::LiveTick&) override {
    ++ticks;
    return done >= after ? "observer said so" : "";
  }
  void onRequestDone(const bench::RequestRecord&) override { ++done; }
};

}  // namespace

class TestStreamClient : public QObject {
  Q_OBJECT
 private slots:
  void completionsWithUsage() {
    backends::StandinServer server({});
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    AbortAfter obs;
    const auto run = client.runLevel(plan(4, 10, body("standin", 20, false, true)), &obs, nullptr);
    QVERIFY(run.abortReason.empty());
    QCOMPARE(int(run.records.size()), 10);
    QCOMPARE(obs.done, 10);
    for (const auto& r : run.records) {
      QVERIFY2(r.success, r.error.c_str());
      QCOMPARE(r.outputTokens(), std::int64_t(20));
      QVERIFY(r.usageCompletionTokens.has_value());
      QCOMPARE(r.textChunks, std::int64_t(20));
      QCOMPARE(int(r.itlS.size()), 19);
      QVERIFY(r.ttftS > 0);
      QVERIFY(r.latencyS >= r.ttftS);
    }
    QCOMPARE(server.generationRequests(), 10);
  }

  void chatWithoutUsageCountsChunks() {
    backends::StandinServer server({});
    server.start();
    backends::StreamClient client(clientFor(server, "chat"));
    const auto run = client.runLevel(plan(2, 3, body("standin", 7, true, false)), nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 3);
    for (const auto& r : run.records) {
      QVERIFY2(r.success, r.error.c_str());
      QVERIFY(!r.usageCompletionTokens);
      QCOMPARE(r.outputTokens(), std::int64_t(7));  // the role chunk carries no text
      QCOMPARE(r.choiceChunks, std::int64_t(8));     // TTFT fires on the role chunk, as in vLLM
      QCOMPARE(int(r.itlS.size()), 7);
    }
  }

  void everyFailureIsRecordedWithItsReason() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.faults = {{StandinFault::Kind::DieAfter, 3},        {StandinFault::Kind::GarbageAfter, 2},
                  {StandinFault::Kind::NeverAnswer, 0},     {StandinFault::Kind::HttpError, 0, 503},
                  {StandinFault::Kind::ErrorMidStream, 2},  {StandinFault::Kind::StallAfter, 2},
                  {StandinFault::Kind::None, 0}};
    backends::StandinServer server(cfg);
    server.start();
    backends::StreamClient client(clientFor(server, "completions", /*idleTimeoutS=*/1.0));
    // Concurrency 1 so that request i meets fault i.
    const auto run = client.runLevel(plan(1, 7, body("standin", 10, false, true)), nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 7);
    const char* expected[] = {"closed the connection mid-stream after 3 chunks", "malformed SSE line",
                              "timeout: no data for 1 s (no response)", "HTTP 503: stand-in failure",
                              "server error mid-stream: stand-in engine error", "timeout: no data for 1 s mid-stream"};
    for (int i = 0; i < 6; ++i) {
      const auto& r = run.records[size_t(i)];
      QVERIFY2(!r.success, std::to_string(i).c_str());
      QVERIFY2(r.error.find(expected[i]) != std::string::npos, (std::to_string(i) + ": " + r.error).c_str());
    }
    QVERIFY2(run.records[6].success, run.records[6].error.c_str());
  }

  // Keep-alive, as vLLM's client: twelve requests at concurrency 4 take four connections (the
  // stand-in counts what it accepted); the next level, narrower, opens none; with keepAlive
  // off, a connection per request.
  void keptConnectionsServeLaterRequests() {
    backends::StandinServer server({});
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    auto run = client.runLevel(plan(4, 12, body("standin", 20, false, true)), nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 12);
    for (const auto& r : run.records) {
      QVERIFY2(r.success, r.error.c_str());
      QCOMPARE(r.outputTokens(), std::int64_t(20));
    }
    QCOMPARE(server.connectionsAccepted(), 4);
    QCOMPARE(run.connectionsOpened, 4);
    QCOMPARE(run.connectionsReused, 8);
    run = client.runLevel(plan(2, 6, body("standin", 5, true, true)), nullptr, nullptr);
    for (const auto& r : run.records) QVERIFY2(r.success, r.error.c_str());
    QCOMPARE(run.connectionsOpened, 0);
    QCOMPARE(run.connectionsReused, 6);
    QCOMPARE(server.connectionsAccepted(), 4);

    auto cfg = clientFor(server, "completions");
    cfg.keepAlive = false;
    backends::StreamClient closing(cfg);
    run = closing.runLevel(plan(2, 5, body("standin", 5, false, true)), nullptr, nullptr);
    for (const auto& r : run.records) QVERIFY2(r.success, r.error.c_str());
    QCOMPARE(run.connectionsReused, 0);
    QCOMPARE(server.connectionsAccepted(), 4 + 5);
  }

  // A server that answers "Connection: close" is never sent a second request on that
  // connection. One that closes a kept connection as a request goes out on it (no byte of an
  // answer) gets the request again on a new connection, once, and it counts as a success. A kept
  // connection that dies after answering began is a failure, as on a new one.
  void closedConnectionsAreNotReused() {
    backends::StandinConfig noKeep;
    noKeep.keepAlive = false;
    backends::StandinServer closing(noKeep);
    closing.start();
    backends::StreamClient client(clientFor(closing, "completions"));
    auto run = client.runLevel(plan(2, 6, body("standin", 5, false, true)), nullptr, nullptr);
    for (const auto& r : run.records) QVERIFY2(r.success, r.error.c_str());
    QCOMPARE(closing.connectionsAccepted(), 6);
    QCOMPARE(run.connectionsReused, 0);

    backends::StandinConfig drop;
    drop.dropReusedRequests = true;
    backends::StandinServer dropping(drop);
    dropping.start();
    backends::StreamClient again(clientFor(dropping, "completions"));
    run = again.runLevel(plan(1, 4, body("standin", 5, false, true)), nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 4);
    for (const auto& r : run.records) QVERIFY2(r.success, r.error.c_str());
    QCOMPARE(run.staleRetries, 3);
    QCOMPARE(dropping.connectionsAccepted(), 4);
    QCOMPARE(dropping.generationRequests(), 4);  // each answered once

    backends::StandinConfig dies;
    dies.faults = {{StandinFault::Kind::None, 0}, {StandinFault::Kind::DieAfter, 2}};
    backends::StandinServer dying(dies);
    dying.start();
    backends::StreamClient third(clientFor(dying, "completions"));
    run = third.runLevel(plan(1, 2, body("standin", 5, false, true)), nullptr, nullptr);
    QVERIFY2(run.records[0].success, run.records[0].error.c_str());
    QVERIFY(!run.records[1].success);
    QVERIFY2(run.records[1].error.find("closed the connection mid-stream after 2 chunks") != std::string::npos,
             run.records[1].error.c_str());
    QCOMPARE(run.connectionsReused, 1);
    QCOMPARE(run.staleRetries, 0);
  }

  void unknownModelAndRefusedConnection() {
    backends::StandinServer server({});
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    auto run = client.runLevel(plan(1, 1, body("nope", 4, false, true)), nullptr, nullptr);
    QCOMPARE(run.records[0].error, std::string("HTTP 404: The model `nope` does not exist."));
    const std::string url = server.baseUrl();
    server.stop();
    backends::ClientConfig cfg;
    cfg.endpoint = bench::parseEndpointUrl(url, "completions");
    backends::StreamClient refused(cfg);
    run = refused.runLevel(plan(2, 3, body("standin", 4, false, true)), nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 3);
    for (const auto& r : run.records) QVERIFY2(r.error.find("connect to 127.0.0.1") != std::string::npos, r.error.c_str());
  }

  void stopFlagAndObserverAbortFailInFlightRequests() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.01;  // 400 tokens take 4 s: the level is cut long before
    backends::StandinServer server(cfg);
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    std::atomic<bool> stop{false};
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop = true;
    });
    auto run = client.runLevel(plan(3, 6, body("standin", 400, false, true)), nullptr, &stop);
    stopper.join();
    QCOMPARE(run.abortReason, std::string("stopped by the user"));
    QCOMPARE(int(run.records.size()), 3);  // three were issued; the rest never started
    for (const auto& r : run.records) QCOMPARE(r.error, std::string("aborted: stopped by the user"));

    AbortAfter obs;
    obs.after = 0;  // abort at the first tick, ~100 ms in, with both streams mid-way
    run = client.runLevel(plan(2, 5, body("standin", 100, false, true)), &obs, nullptr);
    QCOMPARE(run.abortReason, std::string("observer said so"));
    QCOMPARE(obs.ticks, 1);
    QCOMPARE(int(run.records.size()), 2);
    for (const auto& r : run.records) QCOMPARE(r.error, std::string("aborted: observer said so"));
  }

  void clientTimesFollowServerSendTimes() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.003;
    cfg.recordSendTimes = true;
    backends::StandinServer server(cfg);
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    auto p = plan(4, 8, body("standin", 12, false, true));
    p.requestIdPrefix = "ts";
    const auto run = client.runLevel(p, nullptr, nullptr);
    const auto sent = server.sendTimes();
    for (size_t i = 0; i < run.records.size(); ++i) {
      const auto& r = run.records[i];
      QVERIFY2(r.success, r.error.c_str());
      const auto& s = sent.at("ts-" + std::to_string(i));
      QCOMPARE(int(s.size()), 12);
      double t = run.startMonoS + r.startS + r.ttftS;
      QVERIFY(t >= s[0]);  // a chunk cannot arrive before it was sent
      for (size_t k = 0; k < r.itlS.size(); ++k) {
        t += r.itlS[k];
        QVERIFY(t + 1e-9 >= s[k + 1]);
      }
    }
  }

  // Unpaced round-robin: every stream gets a frame per pass (a server ending a decode step), so
  // the streams' sends interleave; fed until its socket is full, a short stream would go whole.
  void roundRobinInterleavesStreams() {
    for (const bool roundRobin : {true, false}) {
      backends::StandinConfig cfg;
      cfg.roundRobin = roundRobin;
      cfg.recordSendTimes = true;
      backends::StandinServer server(cfg);
      server.start();
      backends::StreamClient client(clientFor(server, "completions"));
      auto p = plan(4, 4, body("standin", 300, false, true));
      p.requestIdPrefix = roundRobin ? "rr" : "fill";
      const auto run = client.runLevel(p, nullptr, nullptr);
      QCOMPARE(int(run.records.size()), 4);
      for (const auto& r : run.records) {
        QVERIFY2(r.success, r.error.c_str());
        QCOMPARE(r.outputTokens(), std::int64_t(300));
      }
      std::vector<std::pair<double, int>> sends;  // (time, stream)
      int stream = 0;
      for (const auto& [id, times] : server.sendTimes()) {
        QCOMPARE(int(times.size()), 300);
        for (double t : times) sends.emplace_back(t, stream);
        ++stream;
      }
      QCOMPARE(stream, 4);
      std::stable_sort(sends.begin(), sends.end());
      int switches = 0;
      for (size_t i = 1; i < sends.size(); ++i) switches += sends[i].second != sends[i - 1].second;
      if (roundRobin)
        QVERIFY2(switches >= 600, std::to_string(switches).c_str());  // ~4 per pass over 300 passes
      else
        QVERIFY2(switches < 100, std::to_string(switches).c_str());  // streams went mostly whole
    }
  }

  void durationModeIssuesUntilTimeIsUp() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    backends::StandinServer server(cfg);
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    backends::LevelPlan p;
    p.concurrency = 2;
    p.durationS = 0.5;
    p.bodies = {body("standin", 10, false, /*usage=*/false)};
    const auto run = client.runLevel(p, nullptr, nullptr);
    QVERIFY2(run.records.size() > 4, std::to_string(run.records.size()).c_str());  // ~20 ms each, 2 at a time
    for (const auto& r : run.records) {
      QVERIFY(r.startS < 0.5);  // nothing issued after the duration
      QVERIFY2(r.success, r.error.c_str());
    }
    const auto level = bench::computeLevelMetrics(run.records, run.durationS, {});
    QCOMPARE(level.outputTokensSource, std::string("chunks"));
    QCOMPARE(level.totalOutputTokens, std::int64_t(10) * std::int64_t(run.records.size()));
  }

  void finiteRateSpacesIssues() {
    backends::StandinServer server({});
    server.start();
    backends::StreamClient client(clientFor(server, "completions"));
    auto p = plan(8, 5, body("standin", 2, false, true));
    p.rate = 20.0;  // mean gap 50 ms
    p.seed = 7;
    const auto run = client.runLevel(p, nullptr, nullptr);
    // Each request is issued no earlier than its scheduled arrival (same seed, same gaps).
    bench::RequestSchedule expected(20.0, 1.0, 7);
    for (size_t i = 0; i < run.records.size(); ++i) {
      const double due = expected.next();
      QVERIFY2(run.records[i].startS >= due, std::to_string(i).c_str());
      QVERIFY(run.records[i].success);
    }
    QVERIFY(run.records.back().startS > 0.0);
  }
};

QTEST_GUILESS_MAIN(TestStreamClient)
#include "test_stream_client.moc"
