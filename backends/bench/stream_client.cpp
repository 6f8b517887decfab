#include "backends/bench/stream_client.h"

#include <netdb.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <unordered_map>

#include "backends/bench/stream_connection.h"
#include "core/bench/chunk_parser.h"
#include "core/bench/request_schedule.h"

namespace crosslab::backends {

namespace {
double realtimeSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

double monotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

constexpr double kTickS = 0.1;
constexpr size_t kReadBuffer = 256 * 1024;

// Closes the epoll descriptor whatever way the level ends.
struct EpollFd {
  int fd = ::epoll_create1(EPOLL_CLOEXEC);
  ~EpollFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

struct StreamClient::Impl {
  ClientConfig config;
  sockaddr_storage addr{};
  socklen_t addrLen = 0;
  std::string where;
  bench::ChunkParser chunkParser;
  std::vector<char> buffer = std::vector<char>(kReadBuffer);
  std::vector<int> idle;  // connections kept open for the next request, the newest last

  ~Impl() {
    for (int fd : idle) ::close(fd);
  }

  // A kept connection that the server has not closed meanwhile (its keep-alive timeout, 5 s
  // in httplib and uvicorn), or -1: a peek at it must find nothing to read yet. The newest
  // first; what the server closed goes.
  int takeIdle() {
    while (!idle.empty()) {
      const int fd = idle.back();
      idle.pop_back();
      char byte = 0;
      const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return fd;
      ::close(fd);  // closed (0), reset (-1), or bytes nobody asked for (> 0)
    }
    return -1;
  }

  std::string buildRequest(const std::string& body, const std::string& requestId) const {
    std::string r;
    r.reserve(body.size() + 256);
    r += "POST " + config.endpoint.path + " HTTP/1.1\r\nHost: " + config.endpoint.hostHeader +
         "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n" +
         (config.keepAlive ? "" : "Connection: close\r\n") + "X-Request-Id: " + requestId +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    if (!config.authorization.empty()) r += "Authorization: " + config.authorization + "\r\n";
    r += "\r\n";
    r += body;
    return r;
  }
};

StreamClient::StreamClient(ClientConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  const auto& ep = impl_->config.endpoint;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &res);
  if (rc != 0 || !res) throw std::runtime_error("cannot resolve " + ep.host + ": " + gai_strerror(rc));
  std::memcpy(&impl_->addr, res->ai_addr, res->ai_addrlen);
  impl_->addrLen = res->ai_addrlen;
  ::freeaddrinfo(res);
  impl_->where = ep.host + ":" + std::to_string(ep.port);
}

StreamClient::~StreamClient() = default;

LevelRun StreamClient::runLevel(const LevelPlan& plan, LevelObserver* observer, const std::atomic<bool>* stop) {
  if (plan.bodies.empty()) throw std::invalid_argument("no request bodies");
  if (plan.concurrency < 1) throw std::invalid_argument("concurrency must be >= 1");
  EpollFd ep;
  if (ep.fd < 0) throw std::runtime_error("epoll_create1 failed");
  Impl& im = *impl_;
  bench::RequestSchedule schedule(plan.rate, plan.burstiness, plan.seed);
  LevelRun run;
  run.startMonoS = monotonicSeconds();
  double realToMono = run.startMonoS - realtimeSeconds();  // re-measured every tick
  std::unordered_map<int, std::unique_ptr<StreamConnection>> live;  // by fd
  std::int64_t textChunks = 0;
  int issued = 0, arrived = 0, done = 0, failedCount = 0;
  double nextArrival = schedule.next(), nextTick = kTickS;
  const int planned = plan.numRequests.value_or(0);

  auto now = [&] { return monotonicSeconds() - run.startMonoS; };
  // Arrivals follow the schedule until the plan's count or duration is reached.
  auto moreToArrive = [&](double t) {
    return plan.numRequests ? arrived < *plan.numRequests : t < plan.durationS;
  };
  auto retire = [&](StreamConnection& c) {
    if (const int kept = c.releaseSocket(); kept >= 0) {
      ::epoll_ctl(ep.fd, EPOLL_CTL_DEL, kept, nullptr);
      im.idle.push_back(kept);
    }
    bench::RequestRecord rec = c.finish();
    if (!rec.success) ++failedCount;
    ++done;
    if (observer) observer->onRequestDone(rec);
    if (run.records.size() <= c.index()) run.records.resize(c.index() + 1);
    run.records[c.index()] = std::move(rec);
  };
  // Request `index`, issued at level time `t`, on a kept connection when one is open (unless
  // `fresh`), else on a new one.
  auto start = [&](size_t index, double t, bool fresh) {
    auto conn = std::make_unique<StreamConnection>(
        index, t, plan.inputLen,
        im.buildRequest(plan.bodies[index % plan.bodies.size()], plan.requestIdPrefix + "-" + std::to_string(index)),
        im.chunkParser, textChunks);
    const int kept = im.config.keepAlive && !fresh ? im.takeIdle() : -1;
    if (kept >= 0) {
      conn->adopt(kept, im.where);
      ++run.connectionsReused;
    } else {
      conn->connectTo(im.addr, im.addrLen, im.where);
      ++run.connectionsOpened;
    }
    if (conn->state() == StreamConnection::State::Finished) {
      retire(*conn);
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.fd = conn->fd();
    ::epoll_ctl(ep.fd, EPOLL_CTL_ADD, conn->fd(), &ev);
    live.emplace(conn->fd(), std::move(conn));
  };
  // A request lost to a stale kept connection had no answer: it is sent again on a new
  // connection (`retry`, not once the level is aborted), after the loop (its socket number,
  // closed, may come back for the new one while the old entry is still in `live`).
  auto retireFinished = [&](bool retry) {
    std::vector<std::unique_ptr<StreamConnection>> again;
    for (auto it = live.begin(); it != live.end();) {
      if (it->second->state() == StreamConnection::State::Finished) {
        if (retry && it->second->lostToStaleConnection())
          again.push_back(std::move(it->second));
        else
          retire(*it->second);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& c : again) {
      ++run.staleRetries;
      start(c->index(), c->startS(), /*fresh=*/true);
    }
  };
  auto issue = [&](double t) { start(static_cast<size_t>(issued++), t, /*fresh=*/false); };
  auto abortAll = [&](const std::string& reason) {
    for (auto& [fd, c] : live) c->abort(reason);
    retireFinished(false);
  };

  std::vector<epoll_event> events(1024);
  for (;;) {
    double t = now();
    // Arrivals happen on schedule; the semaphore (concurrency) decides when they start.
    // Arrivals beyond the free slots wait in the schedule (at an infinite rate every
    // arrival is due at once: counting them all would never end in duration mode).
    while (moreToArrive(t) && nextArrival <= t && arrived < issued + plan.concurrency) {
      ++arrived;
      nextArrival = schedule.next();
    }
    if (!plan.numRequests && t >= plan.durationS) arrived = issued;  // duration over: no more
    retireFinished(true);  // frees semaphore slots before issuing
    while (issued < arrived && static_cast<int>(live.size()) < plan.concurrency) issue(t);
    if (live.empty() && issued == arrived && !moreToArrive(t)) break;

    // Sleep until the next tick, the next future arrival, or socket activity (which is
    // also what frees a slot for an arrival that is already due).
    const bool arrivalAhead = moreToArrive(t) && nextArrival > t;
    const double wake = arrivalAhead ? std::min(nextTick, nextArrival) : nextTick;
    const int timeoutMs = std::max(0, static_cast<int>(std::ceil((wake - t) * 1000.0)));
    const int n = ::epoll_wait(ep.fd, events.data(), static_cast<int>(events.size()), timeoutMs);
    for (int i = 0; i < n; ++i) {
      auto it = live.find(events[i].data.fd);
      if (it == live.end()) continue;
      StreamConnection& c = *it->second;
      if ((events[i].events & EPOLLOUT) && c.wantsWrite()) {
        c.onWritable(now());
        if (!c.wantsWrite() && c.state() != StreamConnection::State::Finished) {
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = c.fd();
          ::epoll_ctl(ep.fd, EPOLL_CTL_MOD, c.fd(), &ev);
        }
      }
      if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c.state() != StreamConnection::State::Finished)
        c.onReadable(im.buffer.data(), im.buffer.size(), run.startMonoS, realToMono);
    }
    t = now();
    if (t < nextTick) continue;
    nextTick = t + kTickS;
    realToMono = monotonicSeconds() - realtimeSeconds();
    // Timeouts, the stop flag, and the observer's watch, ~10 times a second.
    LiveTick tick;
    tick.elapsedS = t;
    tick.textChunks = textChunks;
    tick.issued = issued;
    tick.done = done;
    tick.failed = failedCount;
    tick.planned = planned;
    for (auto& [fd, c] : live) {
      const double silence = t - c->lastActivityS();
      const bool connecting = c->wantsWrite();
      if (connecting && silence > im.config.connectTimeoutS)
        c->abort("timeout: could not connect or send within " + std::to_string(int(im.config.connectTimeoutS)) + " s");
      else if (silence > im.config.idleTimeoutS)
        c->abort(std::string("timeout: no data for ") + std::to_string(int(im.config.idleTimeoutS)) + " s" +
                 (c->decoding() ? " mid-stream" : " (no response)"));
      if (c->decoding()) {
        ++tick.decoding;
        const double quiet = t - c->lastChunkS();
        tick.longestSilenceS = std::max(tick.longestSilenceS, quiet);
        if (quiet >= 1.0) ++tick.silentStreams;
      }
    }
    retireFinished(true);
    tick.inFlight = static_cast<int>(live.size());
    if (stop && stop->load()) {
      run.abortReason = "stopped by the user";
    } else if (observer) {
      run.abortReason = observer->onTick(tick);
    }
    if (!run.abortReason.empty()) {
      abortAll("aborted: " + run.abortReason);
      break;
    }
  }
  run.durationS = now();
  // Requests that never started (level aborted) are not records: they were never issued.
  return run;
}

}  // namespace crosslab::backends
