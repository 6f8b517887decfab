// The streamed body's chunks written straight to a connection's socket (connection_socket.h
// writeChunk), over real TCP sockets on loopback: the exact chunked framing, a socket too full
// for the chunk (it waits for room and sends the rest), a reader that never reads (false after
// the timeout), a peer that closed (false, no SIGPIPE); the server sending every stream's
// writes that way, with the client decoding the same frames; one keep-alive connection
// serving many requests, its server end without Nagle's algorithm; and the benchmark's client
// keeping its connections between requests.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "backends/bench/stream_client.h"
#include "backends/serve/connection_socket.h"
#include "core/bench/endpoint_url.h"
#include "tests/serve/serve_fixture.h"

using namespace crosslab;
using nlohmann::json;

namespace {

// Both ends of a TCP connection on loopback, closed on destruction. `sendBuffer` > 0: the
// writing end's SO_SNDBUF, and the reading end's SO_RCVBUF, so that a chunk of a few hundred KB
// fills them.
struct Pair {
  int writer = -1, reader = -1;
  explicit Pair(int buffers = 0) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    reader = ::socket(AF_INET, SOCK_STREAM, 0);
    const timeval guard{30, 0};  // a read that waits this long ends (a lost byte fails the test, not hangs it)
    ::setsockopt(reader, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    if (buffers > 0) ::setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &buffers, sizeof buffers);
    if (::connect(reader, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) writer = ::accept(listener, nullptr, nullptr);
    if (buffers > 0 && writer >= 0) ::setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &buffers, sizeof buffers);
    ::close(listener);
  }
  ~Pair() {
    if (writer >= 0) ::close(writer);
    if (reader >= 0) ::close(reader);
  }
  // Everything readable until `bytes` have come, the writer closed, or nothing came for 30 s.
  std::string read(size_t bytes) const {
    std::string got;
    char buf[65536];
    for (ssize_t n; got.size() < bytes && (n = ::recv(reader, buf, sizeof buf, 0)) > 0;) got.append(buf, size_t(n));
    return got;
  }
};

// The serve fixture written into `tmp`, served on loopback with batches of up to `maxBatch`.
std::unique_ptr<testing::LocalServer> tinyServer(const QTemporaryDir& tmp, int maxBatch) {
  const std::string dir = tmp.path().toStdString();
  testing::writeServeFixture(dir);
  infer::SchedulerOptions so;
  so.maxBatch = maxBatch;
  serve::ServerOptions opt;
  opt.baseModelId = "tiny";
  return std::make_unique<testing::LocalServer>(dir, so, opt);
}

// The server's end of the loopback connection whose client end is `clientFd`, found among this
// process's descriptors (the test server runs in it), or -1.
int serverEndOf(int clientFd) {
  sockaddr_in mine{}, peer{};
  socklen_t len = sizeof mine;
  if (::getsockname(clientFd, reinterpret_cast<sockaddr*>(&mine), &len) != 0) return -1;
  for (const QString& name : QDir("/proc/self/fd").entryList(QDir::Files | QDir::System)) {
    const int fd = name.toInt();
    len = sizeof peer;
    if (fd != clientFd && ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 &&
        peer.sin_family == AF_INET && peer.sin_port == mine.sin_port)
      return fd;
  }
  return -1;
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + (i * 7 + i / 251) % 26);
  return s;
}

}  // namespace

class TestConnectionSocket : public QObject {
  Q_OBJECT

 private slots:
  void chunkHasHttpFraming() {
    Pair p;
    QVERIFY(p.writer >= 0);
    QVERIFY(serve::writeChunk(p.writer, "", std::chrono::milliseconds(1000)));  // nothing: an empty chunk ends a body
    QVERIFY(serve::writeChunk(p.writer, "data: {}\n\n", std::chrono::milliseconds(1000)));
    QVERIFY(serve::writeChunk(p.writer, std::string(300, 'x'), std::chrono::milliseconds(1000)));
    const std::string expected = "a\r\ndata: {}\n\n\r\n12c\r\n" + std::string(300, 'x') + "\r\n";
    QCOMPARE(p.read(expected.size()), expected);
  }

  // A chunk far larger than both sockets' buffers goes in parts: the first send takes what fits,
  // the rest waits for the reader, who gets every byte in order.
  void chunkLargerThanTheSocketGoesWhole() {
    Pair p(16384);
    QVERIFY(p.writer >= 0);
    const std::string data = pattern(1 << 20);
    bool ok = false;
    std::thread w([&] { ok = serve::writeChunk(p.writer, data, std::chrono::milliseconds(60000)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the sockets fill meanwhile
    const std::string expected = "100000\r\n" + data + "\r\n";
    const std::string got = p.read(expected.size());
    w.join();
    QVERIFY(ok);
    QCOMPARE(got.size(), expected.size());
    QVERIFY(got == expected);
  }

  // A reader that never reads: the write waits for room until its timeout, then fails.
  void stalledReaderTimesOut() {
    Pair p(16384);
    QVERIFY(p.writer >= 0);
    QVERIFY(!serve::writeChunk(p.writer, pattern(4 << 20), std::chrono::milliseconds(100)));
  }

  // A peer that closed: a write fails (the reset, then EPIPE) instead of raising SIGPIPE, which
  // would end this process.
  void closedPeerFails() {
    Pair p;
    QVERIFY(p.writer >= 0);
    ::close(p.reader);
    p.reader = -1;
    bool failed = false;
    for (int i = 0; i < 200 && !failed; ++i) {
      failed = !serve::writeChunk(p.writer, pattern(1024), std::chrono::milliseconds(1000));
      if (!failed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    QVERIFY(failed);
  }

  // The server's writer sends each stream's frames with writeChunk (every write of the shared
  // writer thread went to the socket), and an HTTP client decodes the body into every frame.
  void serverWritesStreamsToTheirSockets() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const auto server = tinyServer(tmp, 4);
    auto c = server->client();
    const int tokens = 200;
    const json req = {{"prompt", "raw"}, {"max_tokens", tokens}, {"ignore_eos", true}, {"stream", true},
                      {"stream_options", {{"include_usage", true}}}};
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    QVERIFY(r);
    QCOMPARE(r->status, 200);
    bool ok = false;
    const auto frames = testing::sseFrames(r->body, &ok);
    QVERIFY2(ok, r->body.substr(0, 300).c_str());
    QCOMPARE(frames.back(), std::string("[DONE]"));
    QCOMPARE(json::parse(frames[frames.size() - 2])["usage"]["completion_tokens"].get<int>(), tokens);
    const int64_t writes = server->server().streamWrites(), toSocket = server->server().streamWritesToSocket();
    qInfo("%lld writes, %lld of them straight to the socket", static_cast<long long>(writes),
          static_cast<long long>(toSocket));
    QVERIFY(writes > 0);
    QCOMPARE(toSocket, writes);
  }

  // A client's keep-alive connection carries request after request, streamed and not, past
  // httplib's default of 5 (after which it answered "Connection: close" and closed the socket):
  // twelve requests, each answered in full on the one connection, none with a close.
  void oneConnectionServesManyRequests() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const auto server = tinyServer(tmp, infer::SchedulerOptions{}.maxBatch);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    QVERIFY(fd >= 0);
    const timeval guard{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(server->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    char buf[65536];
    for (int i = 0; i < 12; ++i) {
      const bool stream = i % 2 == 0;
      const std::string body = json{{"prompt", "keep"}, {"max_tokens", 8}, {"ignore_eos", true}, {"stream", stream}}.dump();
      const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      QCOMPARE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
      // A streamed body ends with the last chunk; a whole one has its Content-Length.
      const auto complete = [&](const std::string& r) {
        const size_t end = r.find("\r\n\r\n");
        if (end == std::string::npos) return false;
        if (stream) return r.size() >= 5 && r.compare(r.size() - 5, 5, "0\r\n\r\n") == 0;
        const size_t at = r.find("Content-Length: ");
        return at != std::string::npos && r.size() >= end + 4 + std::stoul(r.substr(at + 16));
      };
      std::string response;
      for (ssize_t n; !complete(response) && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, size_t(n));
      QVERIFY2(complete(response), ("request " + std::to_string(i + 1) + ": " + response.substr(0, 200)).c_str());
      QVERIFY2(response.rfind("HTTP/1.1 200", 0) == 0, response.substr(0, 200).c_str());
      QVERIFY2(response.find("Connection: close") == std::string::npos,
               ("request " + std::to_string(i + 1) + " closed the connection").c_str());
      QVERIFY(response.find(stream ? "data: [DONE]" : "\"finish_reason\":\"length\"") != std::string::npos);
    }
    // Its socket sends without Nagle's wait: on a kept connection the client's ACKs are delayed
    // (up to 40 ms), and with Nagle each small chunk waited for the one before to be ACKed.
    const int served = serverEndOf(fd);
    QVERIFY(served >= 0);
    int nodelay = 0;
    socklen_t optLen = sizeof nodelay;
    QCOMPARE(::getsockopt(served, IPPROTO_TCP, TCP_NODELAY, &nodelay, &optLen), 0);
    QVERIFY2(nodelay != 0, "the server's end of the connection has Nagle's algorithm on");
    ::close(fd);
  }

  // `crosslab-cli bench`'s client, keep-alive as vLLM's: twelve streamed requests at
  // concurrency 3 through the server open three connections and send nine requests on them
  // again; every stream comes back whole (its 48 tokens by the server's usage count).
  void benchClientReusesItsConnections() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const auto server = tinyServer(tmp, 4);
    backends::ClientConfig cfg;
    cfg.endpoint = bench::parseEndpointUrl("http://127.0.0.1:" + std::to_string(server->port()), "completions");
    cfg.idleTimeoutS = 60;
    backends::StreamClient client(cfg);
    backends::LevelPlan plan;
    plan.concurrency = 3;
    plan.numRequests = 12;
    plan.inputLen = 1;
    const json body = {{"model", "tiny"}, {"prompt", "keep"}, {"max_tokens", 48}, {"ignore_eos", true},
                       {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    plan.bodies = {body.dump()};
    const auto run = client.runLevel(plan, nullptr, nullptr);
    QCOMPARE(int(run.records.size()), 12);
    for (const auto& r : run.records) {
      QVERIFY2(r.success, r.error.c_str());
      QCOMPARE(r.outputTokens(), std::int64_t(48));
    }
    QCOMPARE(run.connectionsOpened, 3);
    QCOMPARE(run.connectionsReused, 9);
    QCOMPARE(run.staleRetries, 0);
  }
};

QTEST_GUILESS_MAIN(TestConnectionSocket)
#include "test_connection_socket.moc"
