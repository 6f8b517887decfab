#pragma once
// A local stand-in for an OpenAI-compatible streaming server (vLLM's wire format), for
// the client's tests and the client-overhead benchmark. It streams pre-made chunks,
// paced or as fast as the socket takes them, records when each content chunk was
// handed to send(), and misbehaves on request: dies mid-stream, sends garbage between
// frames, never answers, answers with an HTTP error or an error chunk, or stalls.
// Loopback only (127.0.0.1), bounded in connections and lifetime; one epoll thread;
// requests are parsed by http-parser.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace crosslab::backends {

struct StandinFault {
  enum class Kind { None, DieAfter, GarbageAfter, NeverAnswer, HttpError, ErrorMidStream, StallAfter };
  Kind kind = Kind::None;
  int afterFrames = 0;  // content frames sent before the fault
  int status = 500;     // HttpError
};

struct StandinConfig {
  std::string model = "standin";
  int defaultTokens = 16;      // when the request names no max_tokens
  int maxTokensCap = 1000000;  // larger requests are a 400, as vLLM does past the context
  double intervalS = 0;        // between content frames; 0 = as fast as the socket takes them
  int framesPerWrite = 1;      // unpaced: content frames per send()
  bool sendUsage = true;       // honour stream_options.include_usage
  int collapseAboveStreams = 0;   // > 0: with more streams than this, every stream slows to …
  double collapsedIntervalS = 0.2;  // … one frame per this many seconds (decode collapse)
  int tokensPerFrame = 1;           // tokens each content frame stands for (usage counts them):
                                    // a server streaming every few tokens (vLLM's stream interval)
  int fullPaceStreams = 0;          // > 0: with more streams than this, they share this many streams'
                                    // pace (a saturated engine: aggregate flat, per stream falling)
  int wholeRepliesAfter = 0;        // > 0: generation requests after this many get all their content
                                    // frames in one write (what a client given no CPU meanwhile reads)
  bool roundRobin = false;          // unpaced: one write per stream per pass over the streams, as a
                                    // server that emits every stream's token at the end of a step
                                    // (without it an unpaced stream is fed until its socket is full)
  std::vector<StandinFault> faults;  // cycled over generation requests in arrival order
  bool keepAlive = true;            // a connection stays open after a response when the request
                                    // allows it (HTTP/1.1's default), as uvicorn (vLLM's server) keeps
                                    // it; a fault that ends a stream closes it
  bool dropReusedRequests = false;  // a request on a kept connection: closed unanswered (a server that
                                    // closed an idle connection as the client sent on it)
  int maxConnections = 1024;
  double maxLifetimeS = 300;   // the server stops itself after this
  bool recordSendTimes = false;
  std::string apiKey;          // non-empty: generation routes need "Authorization: Bearer <key>" (else 401)
  int cpu = -1;                // pin the server thread to this CPU (benchmarks)
  int port = 0;                // 0: a free port
};

class StandinServer {
 public:
  explicit StandinServer(StandinConfig config);
  ~StandinServer();
  StandinServer(const StandinServer&) = delete;
  StandinServer& operator=(const StandinServer&) = delete;

  // Binds 127.0.0.1 on a free port and starts the thread; returns the port.
  std::uint16_t start();
  void stop();
  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // X-Request-Id → CLOCK_MONOTONIC seconds at which the send() that carried each content
  // frame's last byte began.
  std::map<std::string, std::vector<double>> sendTimes() const;
  int generationRequests() const { return generations_.load(); }
  int connectionsAccepted() const { return accepted_.load(); }

 private:
  struct Conn;
  void loop();
  void acceptAll();
  void onReadable(Conn& c);
  void startResponse(Conn& c);
  void pump(Conn& c, double now);
  void closeConn(int fd);
  void nextRequest(Conn& c);  // a kept connection, ready for its next request
  void watch(Conn& c, bool writable);
  void recordSend(Conn& c, double at, int frames);
  double currentInterval() const;

  StandinConfig config_;
  int listenFd_ = -1;
  int epollFd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> generations_{0};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::map<int, std::unique_ptr<Conn>> conns_;
  mutable std::mutex timesMutex_;
  std::map<std::string, std::vector<double>> sendTimes_;
};

}  // namespace crosslab::backends
