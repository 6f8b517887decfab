#pragma once
// The benchmark's streaming client: one thread, one epoll loop, every stream of a level
// on non-blocking sockets, kept open between requests (ClientConfig::keepAlive) in a pool
// that lasts as long as the client, levels and warm-up included (as many connections as the
// widest level's concurrency, as vLLM's connector limit; the server closes what stays idle).
// HTTP/1.1 responses are parsed by http-parser (chunked transfer decoding included), SSE
// events by SseSplitter, chunks by ChunkParser, and each request's times by RequestTimeline.
// Chunks that arrive in one read() share the read's timestamp (CLOCK_MONOTONIC). Qt-free, so
// it can run on a headless box.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/bench/endpoint_url.h"
#include "core/bench/request_record.h"

namespace crosslab::backends {

struct ClientConfig {
  bench::EndpointUrl endpoint;
  std::string authorization;  // full header value ("Bearer …") or empty; never logged
  double connectTimeoutS = 10;
  double idleTimeoutS = 120;  // no byte for this long (also: no response at all) = failed
  // Reuse a connection for the next request once its response has ended, as vLLM's
  // `bench serve` does (one aiohttp TCPConnector for the run, keep-alive, at most the
  // concurrency's connections). false: "Connection: close" and a new connection per request.
  bool keepAlive = true;
};

struct LevelPlan {
  int concurrency = 1;                // in-flight requests at most (vLLM's semaphore)
  std::vector<std::string> bodies;    // request JSON bodies, cycled in issue order
  std::int64_t inputLen = 0;          // prompt tokens asked for (when usage is absent)
  std::optional<int> numRequests;     // issue this many, or …
  double durationS = 0;               // … keep issuing until this many seconds elapsed
  std::optional<double> rate;         // requests/s, nullopt = inf (all released at t = 0)
  double burstiness = 1.0;
  std::uint64_t seed = 0;
  std::string requestIdPrefix = "bench";  // X-Request-Id = prefix-<index>
};

// A snapshot of the level, about every 100 ms.
struct LiveTick {
  double elapsedS = 0;
  std::int64_t textChunks = 0;  // cumulative chunks with text (≈ output tokens)
  int decoding = 0;             // streams past their first chunk, not finished
  int inFlight = 0;
  int issued = 0, done = 0, failed = 0;
  int planned = 0;              // numRequests, or 0 in duration mode
  double longestSilenceS = 0;   // among decoding streams: time since their last chunk
  int silentStreams = 0;        // decoding streams silent for ≥ 1 s
};

class LevelObserver {
 public:
  virtual ~LevelObserver() = default;
  // Returns a non-empty reason to abort the level (in-flight requests fail with it).
  virtual std::string onTick(const LiveTick& tick) = 0;
  virtual void onRequestDone(const bench::RequestRecord& record) = 0;
};

struct LevelRun {
  std::vector<bench::RequestRecord> records;  // in issue order; failures included
  double durationS = 0;                       // level start → last request finished
  double startMonoS = 0;                      // CLOCK_MONOTONIC at level start, seconds
  std::string abortReason;                    // why the level was cut short, if it was
  int connectionsOpened = 0;                  // new TCP connections this level
  int connectionsReused = 0;                  // requests sent on a connection kept from an earlier one
  int staleRetries = 0;                       // requests sent again: their kept connection had closed
};

// Seconds on CLOCK_MONOTONIC (shared by every process on the machine).
double monotonicSeconds();

class StreamClient {
 public:
  // Resolves the endpoint's host once; throws std::runtime_error with a one-line reason.
  explicit StreamClient(ClientConfig config);
  ~StreamClient();
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  // Runs one level to the end (or until `stop` is set or the observer aborts).
  LevelRun runLevel(const LevelPlan& plan, LevelObserver* observer, const std::atomic<bool>* stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosslab::backends
