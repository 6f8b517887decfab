#pragma once
// The OpenAI-compatible HTTP server as vLLM speaks it, on cpp-httplib: POST
// /v1/completions and /v1/chat/completions (streaming SSE and not), GET /health,
// GET /v1/models, GET /metrics (the engine's counters under vLLM's names: engine_metrics.h).
// Routes parse JSON and hand token ids to the BatchScheduler; every handler runs inside one
// wrapper that turns exceptions into vLLM's JSON errors.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace crosslab::infer {
class BatchScheduler;
}

namespace crosslab::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                 // 0 = an ephemeral port
  std::string baseModelId;         // the base model's id in /v1/models and the "model" field
  std::string mergedAdapter;       // with --merge: the only id served (weights already merged)
  std::string apiKey;              // empty = no key; guards every route but /health and /metrics
  // HTTP worker threads = connections served at once (an SSE stream holds one for its
  // whole life; more wait in the accept queue). 0 = defaultHttpThreads(the engine's slots).
  int httpThreads = 0;
  // SO_SNDBUF of every connection, set on the listening socket (accepted sockets inherit it).
  // 0 = the kernel's autotuning (megabytes on loopback). Tests make it small to fill a slow
  // reader's socket within a few hundred tokens.
  int socketSendBuffer = 0;
  // Tokens per streamed write (SGLang's --stream-interval): a stream's first token is sent at
  // once, later ones when this many have arrived (tokens that add text: a token ending inside
  // a UTF-8 character adds none), or streamMaxHoldMs after the oldest of them, the rest with
  // the request's end. Each token stays its own SSE frame (the wire format does not change);
  // larger intervals cost the server and the client fewer writes and reads per token, and
  // make token arrival burstier.
  int streamInterval = 1;
  int streamMaxHoldMs = 50;  // the longest a token waits for the interval's others
  // The SSE writer at nice 19, handing over to one at the process's nice value when other
  // processes starve it (writer_thread.h): on busy cores it falls behind the steps and sends
  // several tokens per write (more tok/s, a longer tail of inter-token gaps). A client that hangs
  // up is noticed by its connection thread, not only by the writer's next write
  // (connection_socket.h). false: one writer at the process's nice value (serve
  // --writer-priority normal).
  bool lowPriorityWriter = true;
  // Lines for whoever runs the server (serve prints them on stderr), from the server's threads:
  // now only when the nice-19 writer hands over, at most once a minute. Empty: none.
  std::function<void(const std::string&)> notice;
};

// Requests one keep-alive connection serves before the server closes it (httplib's default: 5).
constexpr int kKeepAliveRequests = 1000;

// max(256, 4 * maxBatch + 64): a benchmark's 256 streams are all served at once, and
// a big batch still leaves room for connections waiting on a slot plus /health probes.
int defaultHttpThreads(int maxBatch);

class OpenAiServer {
 public:
  OpenAiServer(infer::BatchScheduler& engine, ServerOptions options);
  ~OpenAiServer();

  // Binds the socket; returns the port. Throws std::runtime_error when it cannot bind.
  int bind();
  // Serves until stop() (from any thread). Call bind() first.
  void run();
  void stop();
  // Streaming responses whose client read too slowly for the shared writer thread, so that
  // their own connection thread wrote the rest (openai_server.cpp, SseWriter).
  int64_t streamsHandedBack() const;
  // Writes of streamed frames by the shared writer thread so far (each holds one stream's
  // frames since its last write: see ServerOptions::streamInterval).
  int64_t streamWrites() const;
  // Of those, the ones sent straight to the connection's socket (connection_socket.h
  // writeChunk), not through httplib's sink.
  int64_t streamWritesToSocket() const;
  // Times the nice-19 writer thread, starved of CPU, handed its work to the writer at the
  // process's nice value (writer_thread.h).
  int64_t writerHandoffs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosslab::serve
