#include "backends/bench/standin_server.h"

#include <arpa/inet.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backends/bench/stream_client.h"

namespace crosslab::backends {

namespace {

enum class Phase { Request, Streaming, Closing, Silent };

// One SSE event as an HTTP/1.1 chunk: "<hex size>\r\n<data: …\n\n>\r\n".
std::string httpChunk(const std::string& payload) {
  const std::string frame = "data: " + payload + "\n\n";
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", frame.size());
  return size + frame + "\r\n";
}

std::string errorJson(const std::string& message, const std::string& type, int code) {
  return nlohmann::json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
      .dump();
}

std::string reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 503: return "Service Unavailable";
    default: return status >= 500 ? "Internal Server Error" : "Error";
  }
}

std::string plainResponse(int status, const std::string& body, bool keepAlive) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) +
         "\r\nContent-Type: application/json\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Request fields read through find() (nlohmann's value() trips -Wnull-dereference).
std::string stringField(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->type() == nlohmann::json::value_t::string ? it->get<std::string>() : std::string();
}

bool includeUsage(const nlohmann::json& req) {
  const auto so = req.find("stream_options");
  if (so == req.end() || so->type() != nlohmann::json::value_t::object) return false;
  const auto iu = so->find("include_usage");
  return iu != so->end() && iu->type() == nlohmann::json::value_t::boolean && iu->get<bool>();
}

}  // namespace

struct StandinServer::Conn {
  int fd = -1;
  Phase phase = Phase::Request;
  http_parser parser{};
  std::string url, body, requestId, headerField, authorization;
  bool messageComplete = false;
  std::string out;  // bytes waiting for send()
  bool watchingOut = false;  // its epoll events include EPOLLOUT (else EPOLLIN only)
  // The response being streamed.
  bool chat = false, includeUsage = false;
  int total = 0, sent = 0, promptTokens = 0;
  int unsentFrames = 0;  // content frames in `out` not yet fully handed to send()
  bool whole = false;    // all content frames in one write (StandinConfig::wholeRepliesAfter)
  StandinFault fault;
  bool keepAlive = false;  // the connection stays open after this response
  int served = 0;          // responses before this one on the connection
  double nextSendAt = 0;
  std::string frame, lastFrame, usageFrame, batch;  // pre-made

  static Conn& of(http_parser* p) { return *static_cast<Conn*>(p->data); }
  static const http_parser_settings& settings() {
    static const http_parser_settings s = [] {
      http_parser_settings init{};
      init.on_url = [](http_parser* p, const char* at, size_t len) {
        of(p).url.append(at, len);
        return 0;
      };
      init.on_header_field = [](http_parser* p, const char* at, size_t len) {
        of(p).headerField.assign(at, len);
        return 0;
      };
      init.on_header_value = [](http_parser* p, const char* at, size_t len) {
        Conn& c = of(p);
        if (strcasecmp(c.headerField.c_str(), "x-request-id") == 0) c.requestId.assign(at, len);
        if (strcasecmp(c.headerField.c_str(), "authorization") == 0) c.authorization.assign(at, len);
        return 0;
      };
      init.on_body = [](http_parser* p, const char* at, size_t len) {
        Conn& c = of(p);
        if (c.body.size() + len > (8u << 20)) return 1;  // 8 MiB: a prompt, not a flood
        c.body.append(at, len);
        return 0;
      };
      init.on_message_complete = [](http_parser* p) {
        of(p).messageComplete = true;
        return 0;
      };
      return init;
    }();
    return s;
  }
};

StandinServer::StandinServer(StandinConfig config) : config_(std::move(config)) {
  if (config_.tokensPerFrame < 1) throw std::invalid_argument("stand-in: tokensPerFrame must be >= 1");
}

StandinServer::~StandinServer() { stop(); }

std::uint16_t StandinServer::start() {
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, never 0.0.0.0
  addr.sin_port = htons(static_cast<std::uint16_t>(config_.port));
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 1024) != 0)
    throw std::runtime_error("stand-in server: cannot listen on 127.0.0.1" +
                             (config_.port ? ":" + std::to_string(config_.port) : std::string()));
  socklen_t len = sizeof addr;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listenFd_;
  ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev);
  thread_ = std::thread([this] { loop(); });
  return port_;
}

void StandinServer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, c] : conns_) ::close(fd);
  conns_.clear();
  if (listenFd_ >= 0) ::close(listenFd_);
  if (epollFd_ >= 0) ::close(epollFd_);
  listenFd_ = epollFd_ = -1;
}

std::map<std::string, std::vector<double>> StandinServer::sendTimes() const {
  std::lock_guard<std::mutex> lock(timesMutex_);
  return sendTimes_;
}

void StandinServer::loop() {
  if (config_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(config_.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  const double deadline = monotonicSeconds() + config_.maxLifetimeS;
  std::vector<epoll_event> events(512);
  while (!stop_ && monotonicSeconds() < deadline) {
    double now = monotonicSeconds(), wake = now + 0.05;
    for (auto& [fd, c] : conns_)
      if (c->phase == Phase::Streaming && c->out.empty()) wake = std::min(wake, c->nextSendAt);
    const int timeoutMs = std::max(0, static_cast<int>(std::floor((wake - now) * 1000.0)));
    const int n = ::epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), timeoutMs);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listenFd_) {
        acceptAll();
        continue;
      }
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) onReadable(*it->second);
      it = conns_.find(fd);
      if (it != conns_.end() && (events[i].events & EPOLLOUT)) pump(*it->second, monotonicSeconds());
    }
    now = monotonicSeconds();
    std::vector<int> due;
    for (auto& [fd, c] : conns_)
      if (c->phase == Phase::Streaming && c->out.empty() && c->nextSendAt <= now) due.push_back(fd);
    for (int fd : due) {
      auto it = conns_.find(fd);
      if (it != conns_.end()) pump(*it->second, now);
    }
  }
}

void StandinServer::acceptAll() {
  for (;;) {
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (static_cast<int>(conns_.size()) >= config_.maxConnections) {
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c.get();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev);
    conns_.emplace(fd, std::move(c));
    ++accepted_;
  }
}

void StandinServer::closeConn(int fd) {
  ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  conns_.erase(fd);
}

void StandinServer::nextRequest(Conn& c) {
  const int fd = c.fd, served = c.served + 1;
  const bool watching = c.watchingOut;
  c = Conn{};
  c.fd = fd;
  c.served = served;
  c.watchingOut = watching;
  http_parser_init(&c.parser, HTTP_REQUEST);
  c.parser.data = &c;
}

void StandinServer::onReadable(Conn& c) {
  char buf[16384];
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
  if (n < 0 && errno == EAGAIN) return;
  if (n <= 0) return closeConn(c.fd);  // the client went away: free the slot now
  if (c.phase != Phase::Request) return;  // pipelined bytes after the request: ignored
  const size_t used = http_parser_execute(&c.parser, &Conn::settings(), buf, static_cast<size_t>(n));
  if (!c.messageComplete && used != static_cast<size_t>(n)) {
    c.out = plainResponse(400, errorJson("malformed HTTP request", "BadRequestError", 400), false);
    c.phase = Phase::Closing;
    return pump(c, monotonicSeconds());
  }
  if (c.messageComplete) startResponse(c);
}

void StandinServer::startResponse(Conn& c) {
  if (c.served > 0 && config_.dropReusedRequests) return closeConn(c.fd);
  const double now = monotonicSeconds();
  c.keepAlive = config_.keepAlive && http_should_keep_alive(&c.parser);
  auto fail = [&](int status, const std::string& message, const std::string& type) {
    c.out = plainResponse(status, errorJson(message, type, status), c.keepAlive);
    c.phase = Phase::Closing;
    pump(c, now);
  };
  const std::string path = c.url.substr(0, c.url.find('?'));
  if (path == "/health") {
    c.out = plainResponse(200, "", c.keepAlive);
    c.phase = Phase::Closing;
    return pump(c, now);
  }
  if (path == "/v1/models") {
    c.out = plainResponse(200, nlohmann::json{{"object", "list"},
                                              {"data", {{{"id", config_.model}, {"object", "model"},
                                                         {"owned_by", "crosslab"}, {"root", config_.model},
                                                         {"parent", nullptr}}}}}
                                   .dump(),
                                 c.keepAlive);
    c.phase = Phase::Closing;
    return pump(c, now);
  }
  if (!config_.apiKey.empty() && c.authorization != "Bearer " + config_.apiKey)
    return fail(401, "Unauthorized", "AuthenticationError");
  c.chat = path == "/v1/chat/completions";
  if (!c.chat && path != "/v1/completions") return fail(404, "Not Found: " + path, "NotFoundError");
  const auto req = nlohmann::json::parse(c.body, nullptr, false);
  if (!req.is_object()) return fail(400, "request body is not a JSON object", "BadRequestError");
  const std::string model = stringField(req, "model");
  if (model != config_.model)
    return fail(404, "The model `" + model + "` does not exist.", "NotFoundError");
  const char* maxKey = c.chat && req.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  const auto maxIt = req.find(maxKey);
  if (maxIt != req.end() && maxIt->type() != nlohmann::json::value_t::number_integer &&
      maxIt->type() != nlohmann::json::value_t::number_unsigned)
    return fail(400, std::string(maxKey) + " must be an integer", "BadRequestError");
  const std::int64_t asked = maxIt != req.end() ? maxIt->get<std::int64_t>() : config_.defaultTokens;
  if (asked < 1 || asked > config_.maxTokensCap)
    return fail(400, std::string(maxKey) + " must be between 1 and " + std::to_string(config_.maxTokensCap),
                "BadRequestError");
  c.total = static_cast<int>((asked + config_.tokensPerFrame - 1) / config_.tokensPerFrame);  // frames
  const auto messages = req.find("messages");
  const std::string prompt = c.chat ? (messages != req.end() ? messages->dump() : "") : stringField(req, "prompt");
  c.promptTokens = static_cast<int>(std::count(prompt.begin(), prompt.end(), ' ')) + 1;
  c.includeUsage = config_.sendUsage && includeUsage(req);
  const int index = generations_++;
  if (!config_.faults.empty()) c.fault = config_.faults[static_cast<size_t>(index) % config_.faults.size()];
  c.whole = config_.wholeRepliesAfter > 0 && index >= config_.wholeRepliesAfter;
  if (c.fault.kind == StandinFault::Kind::NeverAnswer) {
    c.phase = Phase::Silent;
    return;
  }
  if (c.fault.kind == StandinFault::Kind::HttpError)
    return fail(c.fault.status, "stand-in failure with status " + std::to_string(c.fault.status),
                c.fault.status >= 500 ? "InternalServerError" : "BadRequestError");

  const std::string id = c.chat ? "chatcmpl-standin" : "cmpl-standin";
  const std::string head = R"({"id":")" + id + R"(","object":")" +
                           (c.chat ? "chat.completion.chunk" : "text_completion") + R"(","created":0,"model":")" +
                           config_.model + R"(","choices":[)";
  auto choice = [&](const char* finish) {
    const std::string fin = finish ? std::string("\"") + finish + "\"" : "null";
    return c.chat ? R"({"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":)" + fin + "}"
                  : R"({"index":0,"text":" tok","logprobs":null,"finish_reason":)" + fin + R"(,"stop_reason":null})";
  };
  c.frame = httpChunk(head + choice(nullptr) + "]}");
  c.lastFrame = httpChunk(head + choice("length") + "]}");
  c.usageFrame = httpChunk(head + R"(],"usage":{"prompt_tokens":)" + std::to_string(c.promptTokens) +
                           R"(,"completion_tokens":)" + std::to_string(asked) + R"(,"total_tokens":)" +
                           std::to_string(c.promptTokens + asked) + "}}");
  c.out = std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n") +
          (c.keepAlive ? "" : "Connection: close\r\n") + "Transfer-Encoding: chunked\r\n\r\n";
  if (c.chat)
    c.out += httpChunk(head + R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})");
  c.phase = Phase::Streaming;
  c.nextSendAt = now;
  pump(c, now);
}

double StandinServer::currentInterval() const {
  if (config_.collapseAboveStreams <= 0 && config_.fullPaceStreams <= 0) return config_.intervalS;
  int streaming = 0;
  for (const auto& [fd, c] : conns_) streaming += c->phase == Phase::Streaming;
  if (config_.collapseAboveStreams > 0 && streaming > config_.collapseAboveStreams) return config_.collapsedIntervalS;
  if (config_.fullPaceStreams > 0 && streaming > config_.fullPaceStreams)
    return config_.intervalS * streaming / config_.fullPaceStreams;
  return config_.intervalS;
}

void StandinServer::recordSend(Conn& c, double at, int frames) {
  if (!config_.recordSendTimes) return;
  std::lock_guard<std::mutex> lock(timesMutex_);
  auto& v = sendTimes_[c.requestId];
  v.insert(v.end(), static_cast<size_t>(frames), at);
}

// Its epoll events: EPOLLOUT too while a send waits for room. Changed only when they change:
// an epoll_ctl per write was about 30% of this thread's time streaming unpaced to 32 streams (perf).
void StandinServer::watch(Conn& c, bool writable) {
  if (c.watchingOut == writable) return;
  epoll_event ev{};
  ev.events = writable ? EPOLLIN | EPOLLOUT : EPOLLIN;
  ev.data.fd = c.fd;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.watchingOut = writable;
}

// Sends what is pending, then produces the next frames while the socket takes them (in
// round-robin mode, one write's worth per call).
void StandinServer::pump(Conn& c, double now) {
  bool produced = false;
  for (;;) {
    double sendStart = 0;  // when the send() that completed the pending frames began
    while (!c.out.empty()) {
      sendStart = monotonicSeconds();
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) return watch(c, true);
      if (n <= 0) return closeConn(c.fd);
      c.out.erase(0, static_cast<size_t>(n));
    }
    if (c.unsentFrames > 0 && sendStart > 0) {  // their last bytes went out in that send()
      recordSend(c, sendStart, c.unsentFrames);
      c.unsentFrames = 0;
    }
    watch(c, false);
    if (c.phase == Phase::Closing) return c.keepAlive ? nextRequest(c) : closeConn(c.fd);  // all sent
    if (c.phase != Phase::Streaming || c.nextSendAt > now) return;
    if (produced && config_.roundRobin) return;  // the next pass writes its next frames
    const StandinFault& f = c.fault;
    if (f.kind != StandinFault::Kind::None && f.kind != StandinFault::Kind::GarbageAfter && c.sent == f.afterFrames) {
      if (f.kind == StandinFault::Kind::DieAfter) return closeConn(c.fd);
      if (f.kind == StandinFault::Kind::StallAfter) {
        c.phase = Phase::Silent;
        return;
      }
      if (f.kind == StandinFault::Kind::ErrorMidStream) {
        c.out = httpChunk(errorJson("stand-in engine error mid-stream", "InternalServerError", 500)) +
                httpChunk("[DONE]") + "0\r\n\r\n";
        c.phase = Phase::Closing;
        c.keepAlive = false;
        continue;
      }
    }
    if (f.kind == StandinFault::Kind::GarbageAfter && c.sent == f.afterFrames && c.out.empty() && c.sent > 0) {
      c.out = "b\r\n\x01garbage{\n\n\r\n";  // 11 bytes: a line that is no SSE field
      c.fault.kind = StandinFault::Kind::None;
      continue;
    }
    if (c.sent < c.total) {
      const int k = c.whole ? c.total - c.sent
                            : currentInterval() > 0 ? 1 : std::min(config_.framesPerWrite, c.total - c.sent);
      for (int i = 0; i < k; ++i) c.out += (c.sent + i + 1 == c.total) ? c.lastFrame : c.frame;
      c.sent += k;
      produced = true;
      c.unsentFrames += k;
      if (config_.intervalS > 0) c.nextSendAt = now + currentInterval();
      continue;
    }
    if (c.includeUsage) c.out += c.usageFrame;
    c.out += httpChunk("[DONE]") + "0\r\n\r\n";
    c.phase = Phase::Closing;
  }
}

}  // namespace crosslab::backends
