// Bounded load on loopback: 256 concurrent streaming clients against a batch of 32, a
// third of them hanging up mid-stream and one in six sending malformed requests. The
// server stays up, every well-formed request that stays connected completes with all its
// tokens and [DONE], every malformed one gets a 400, afterwards every KV slot is free,
// /health is 200, and the process's resident memory is back at its post-warm-up level.
// (Run under the asan preset for the sanitizer half of the check.)
#include <QTemporaryDir>
#include <QtTest>

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "tests/serve/serve_fixture.h"

#if defined(__SANITIZE_ADDRESS__)
#define CROSSLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CROSSLAB_ASAN 1
#endif
#endif

using namespace crosslab;
using nlohmann::json;

namespace {

// kHangUpTokens: what a client that hangs up asks for. Long enough that its sequence is still
// running when the hang-up is noticed however busy the machine. With the 16 the others ask for,
// a round beside test_batch_scheduler (CI, and 7 of 240 runs here beside a loop of it) could
// cancel nothing: every hanging-up client's sequence had ended before its hang-up was seen.
constexpr int kClients = 256, kTokens = 16, kHangUpTokens = 256;

// Resident set size of this process (the server runs in it), from /proc/self/statm.
long long residentBytes() {
  malloc_trim(0);  // hand freed heap pages back first: what stays is what is still held
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

struct Round {
  int completed = 0, rejected = 0, hungUp = 0, wrong = 0;
  std::vector<std::string> failures;
};

// kClients clients at once: i % 3 == 0 hang up after ~200 bytes, i % 6 == 5 send a
// malformed body (the two never overlap), the rest stream kTokens tokens to the end.
Round loadRound(testing::LocalServer& server) {
  std::atomic<int> completed{0}, rejected{0}, hungUp{0}, wrong{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto c = server.client();
      if (i % 6 == 5) {  // malformed: bad JSON, wrong types, over-long asks
        const std::string bodies[] = {R"({"prompt": )", R"({"prompt": "x", "max_tokens": -3})",
                                      R"({"prompt": "x", "max_tokens": 100000})", R"({"prompt": ["a", "b"]})"};
        auto r = c.Post("/v1/completions", bodies[(i / 6) % 4], "application/json");
        if (r && r->status == 400) {
          rejected++;
        } else {
          wrong++;
          failures[size_t(i)] = "malformed request " + bodies[(i / 6) % 4] + " answered " +
                                (r ? std::to_string(r->status) : httplib::to_string(r.error()));
        }
        return;
      }
      httplib::Request req;
      req.method = "POST";
      req.path = i % 2 ? "/v1/completions" : "/v1/chat/completions";
      req.headers = {{"Content-Type", "application/json"}};
      const bool hangUp = i % 3 == 0;
      json body = {{"max_tokens", hangUp ? kHangUpTokens : kTokens}, {"ignore_eos", true}, {"stream", true},
                   {"stream_options", {{"include_usage", true}}}, {"model", i % 4 == 1 ? "lora_a" : "tiny"}};
      if (i % 2)
        body["prompt"] = "client " + std::to_string(i);
      else
        body["messages"] = {{{"role", "user"}, {"content", "client " + std::to_string(i)}}};
      req.body = body.dump();
      std::string got;
      req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
        got.append(d, n);
        return !(hangUp && got.size() > 200);
      };
      auto r = c.send(req);
      if (hangUp) {
        hungUp++;
        return;
      }
      bool ok = false;
      const auto frames = testing::sseFrames(got, &ok);
      int tokens = -1;
      if (ok && frames.size() >= 3 && frames.back() == "[DONE]")
        tokens = json::parse(frames[frames.size() - 2])["usage"]["completion_tokens"].get<int>();
      if (r && r->status == 200 && tokens == kTokens)
        completed++;
      else
        failures[size_t(i)] = "client " + std::to_string(i) + ": " + got.substr(0, 300);
    });
  }
  for (auto& t : clients) t.join();
  Round out;
  out.completed = completed;
  out.rejected = rejected;
  out.hungUp = hungUp;
  out.wrong = wrong;
  for (auto& f : failures)
    if (!f.empty()) out.failures.push_back(f);
  return out;
}

// A server on the fixture (written into `tmp`) whose writer holds every streamed token after the
// first until 5 000 have arrived or an hour has passed: after its first write, a stream's next
// write is its end. Null when `tmp` is not usable.
std::unique_ptr<testing::LocalServer> holdingServer(const QTemporaryDir& tmp) {
  if (!tmp.isValid()) return nullptr;
  const std::string dir = tmp.path().toStdString();
  testing::writeServeFixture(dir);
  infer::SchedulerOptions so;
  so.maxBatch = 4;
  so.maxModelLen = 4096;
  so.prefillChunk = 16;
  serve::ServerOptions opt;
  opt.baseModelId = "tiny";
  opt.streamInterval = 5000;
  opt.streamMaxHoldMs = 3600 * 1000;
  // The writer at the process's nice value: the first token goes at once even on busy cores (at
  // nice 19 it may go when the sequence is near its end, and the hang-up after it too late).
  opt.lowPriorityWriter = false;
  return std::make_unique<testing::LocalServer>(dir, so, opt);
}

// Empty once one sequence more than at `before` was cancelled, long before its 4 000 tokens, and
// none runs (a bounded wait); otherwise what went wrong.
QString cancelledEarly(testing::LocalServer& server, const infer::SchedulerStats& before) {
  for (int i = 0; i < 600; ++i) {  // up to a minute
    const auto st = server.engine().stats();
    if (st.cancelled > before.cancelled && st.running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto after = server.engine().stats();
  const long long cancelled = after.cancelled - before.cancelled, steps = after.steps - before.steps;
  qInfo("cancelled %lld, steps %lld", cancelled, steps);
  if (cancelled != 1 || after.running != 0) return QString("%1 cancelled, %2 running").arg(cancelled).arg(after.running);
  if (steps >= 3900) return "the sequence ran to its end instead of being dropped";
  return {};
}

json longRequest(bool stream) {
  return {{"prompt", "go"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", stream}};
}

// Bounded wait until the hung-up sequences are dropped and nothing queues.
void waitIdle(testing::LocalServer& server) {
  for (int i = 0; i < 600; ++i) {
    const auto st = server.engine().stats();
    if (st.running == 0 && st.waiting == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

class TestServeReliability : public QObject {
  Q_OBJECT

  static void checkRound(const Round& r) {
    for (const auto& f : r.failures) QVERIFY2(false, f.c_str());
    int malformed = 0, hangUps = 0;
    for (int i = 0; i < kClients; ++i) {
      malformed += i % 6 == 5;
      hangUps += i % 3 == 0;
    }
    QCOMPARE(r.wrong, 0);
    QCOMPARE(r.rejected, malformed);
    QCOMPARE(r.hungUp, hangUps);
    QCOMPARE(r.completed, kClients - malformed - hangUps);  // 256 - 42 - 86 = 128
  }

 private slots:
  void manyStreamsWithDisconnectsAndGarbage() {
    std::signal(SIGPIPE, SIG_IGN);
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dir = tmp.path().toStdString();
    testing::writeServeFixture(dir);
    infer::SchedulerOptions so;
    so.maxBatch = 32;
    so.maxModelLen = 512;
    so.prefillChunk = 8;
    so.threads = 2;
    so.loras = {{"lora_a", dir + "/lora_a"}};
    serve::ServerOptions opt;
    opt.baseModelId = "tiny";  // httpThreads 0: the default, which must serve 256 streams at once
    // The writer at the process's nice value, as holdingServer's: the clients here are this
    // process's own threads, whose load the nice-19 writer's handover does not count (it counts
    // other processes'), so at nice 19 a stream's first bytes may come with its last.
    opt.lowPriorityWriter = false;
    QVERIFY(serve::defaultHttpThreads(so.maxBatch) >= kClients);
    testing::LocalServer server(dir, so, opt);

    // Warm-up round: thread pools, malloc arenas, tensor caches reach their working size.
    const Round warm = loadRound(server);
    checkRound(warm);
    if (QTest::currentTestFailed()) return;
    waitIdle(server);
    const long long baseline = residentBytes();

    const Round load = loadRound(server);
    checkRound(load);
    if (QTest::currentTestFailed()) return;
    waitIdle(server);
    const auto st = server.engine().stats();
    QCOMPARE(st.running, 0);
    QCOMPARE(st.waiting, 0);
    QCOMPARE(st.kvSlots, so.maxBatch);
    QCOMPARE(st.freeKvSlots, st.kvSlots);  // every KV slot is free again
    QVERIFY(st.maxBatchSeen > 1);
    QVERIFY(st.cancelled > 0);  // the hang-ups really were dropped mid-stream

    // Memory back at its baseline. Measured here: +1.9 MiB over the load round, and
    // +0.6, +0.5, +0.4 MiB over further rounds (allocator settling, shrinking each round,
    // not linear as a leak is). The bound, 16 MiB, is what keeping 64 KiB per request of
    // the round (one stream's frames, a sequence's state) would cost: 256 × 64 KiB.
    const long long after = residentBytes();
    const long long growth = after - baseline;
    qInfo("RSS after warm-up %.1f MiB, after the load round %.1f MiB (growth %.2f MiB)", baseline / 1048576.0,
          after / 1048576.0, growth / 1048576.0);
#ifndef CROSSLAB_ASAN  // ASan's quarantine keeps freed memory resident; there LeakSanitizer checks instead
    QVERIFY2(growth < 16LL << 20, qPrintable(QString("RSS grew by %1 MiB").arg(growth / 1048576.0)));
#endif

    auto c = server.client();
    QCOMPARE(c.Get("/health")->status, 200);
    QCOMPARE(c.Post("/v1/completions", R"({"prompt": "still here", "max_tokens": 3})", "application/json")->status, 200);
  }

  // A client that hangs up while its stream has nothing to write is found out at once: its
  // connection thread watches the socket (connection_socket.h), not only the writes. Without
  // that, this stream's next write after its first token, and so the hang-up, would come at its
  // 4 000th token.
  void hangUpIsNoticedBetweenWrites() {
    QTemporaryDir tmp;
    auto server = holdingServer(tmp);
    QVERIFY(server);
    const auto before = server->engine().stats();
    {
      auto c = server->client();
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.headers = {{"Content-Type", "application/json"}};
      req.body = longRequest(true).dump();
      std::string got;
      req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
        got.append(d, n);
        return false;  // the first token's frame came: hang up
      };
      c.send(req);
      QVERIFY2(got.find("\"text\"") != std::string::npos, got.c_str());
    }
    const QString why = cancelledEarly(*server, before);
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }

  // The same for a request that does not stream: a client that gives up waiting for the whole
  // reply (its read timeout) frees its slot too.
  void hangUpOfAWholeRequestIsNoticed() {
    QTemporaryDir tmp;
    auto server = holdingServer(tmp);
    QVERIFY(server);
    const auto before = server->engine().stats();
    {
      auto c = server->client();
      c.set_read_timeout(0, 50 * 1000);
      auto r = c.Post("/v1/completions", longRequest(false).dump(), "application/json");
      QVERIFY2(!r, "the whole reply came within the client's 50 ms");
    }
    const QString why = cancelledEarly(*server, before);
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }
};

QTEST_GUILESS_MAIN(TestServeReliability)
#include "test_serve_reliability.moc"
