#include "backends/bench/stream_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace crosslab::backends {

namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

double monoNow() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

StreamConnection::StreamConnection(size_t index, double startS, std::int64_t inputLen, std::string request,
                                   bench::ChunkParser& parser, std::int64_t& textChunkCounter)
    : index_(index),
      request_(std::move(request)),
      timeline_(startS, inputLen),
      chunkParser_(parser),
      textChunks_(textChunkCounter),
      lastActivityS_(startS) {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
}

StreamConnection::~StreamConnection() { closeSocket(); }

void StreamConnection::closeSocket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StreamConnection::connectTo(const sockaddr_storage& addr, socklen_t len, const std::string& where) {
  where_ = where;
  fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return abort(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Kernel receive timestamps: a chunk's time is when it reached the socket, not when
  // this thread got to read it (which a busy machine can delay by milliseconds).
  ::setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS)
    abort("connect to " + where_ + ": " + std::strerror(errno));
}

void StreamConnection::adopt(int fd, const std::string& where) {
  where_ = where;
  fd_ = fd;
  reused_ = true;
  state_ = State::Sending;
}

void StreamConnection::lost(const std::string& reason) {
  stale_ = true;
  abort(reason);
}

void StreamConnection::onWritable(double nowS) {
  if (state_ == State::Connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return abort("connect to " + where_ + ": " + std::strerror(err));
    state_ = State::Sending;
  }
  while (state_ == State::Sending && sent_ < request_.size()) {
    const ssize_t n = ::send(fd_, request_.data() + sent_, request_.size() - sent_, MSG_NOSIGNAL);
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0 && reused_ && !answered_ && (errno == EPIPE || errno == ECONNRESET))
      return lost(std::string("sending request on a kept-alive connection: ") + std::strerror(errno));
    if (n < 0) return abort(std::string("sending request: ") + std::strerror(errno));
    sent_ += static_cast<size_t>(n);
    lastActivityS_ = nowS;
  }
  if (state_ == State::Sending) state_ = State::Receiving;
}

void StreamConnection::onReadable(char* buffer, size_t capacity, double levelStartMonoS, double realToMonoS) {
  if (state_ == State::Connecting || state_ == State::Sending) {
    // A server may answer (an error, say) before reading the whole request.
    state_ = State::Receiving;
  }
  iovec iov{buffer, capacity};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec)) * 2];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(fd_, &msg, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  nowS_ = receiveTime(msg, levelStartMonoS, realToMonoS);
  lastActivityS_ = nowS_;
  if (n <= 0 && reused_ && !answered_ && (n == 0 || errno == ECONNRESET))
    return lost("the server closed a kept-alive connection before answering");
  if (n < 0) return abort(std::string("connection error: ") + std::strerror(errno) + after());
  if (n == 0) {
    http_parser_execute(&parser_, &settings(), buffer, 0);  // EOF may end a message
    return complete(true);
  }
  answered_ = true;
  const size_t used = http_parser_execute(&parser_, &settings(), buffer, static_cast<size_t>(n));
  if (messageComplete_ && used < static_cast<size_t>(n)) trailing_ = true;  // the parser paused at its end
  if (state_ == State::Finished) return;
  if (timeline_.failed()) return complete(false);
  if (used != static_cast<size_t>(n) && !messageComplete_)
    return abort(std::string("bad HTTP response: ") +
                 http_errno_description(static_cast<http_errno>(parser_.http_errno)));
  if (messageComplete_) complete(false);
}

// The kernel's receive timestamp of the newest data in this read (CLOCK_REALTIME, moved
// onto CLOCK_MONOTONIC with the offset the client measures), else the time now.
double StreamConnection::receiveTime(const msghdr& msg, double levelStartMonoS, double realToMonoS) const {
  const double now = monoNow();
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec ts{};
    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    const double mono = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9 + realToMonoS;
    // Trust it only when it is plausible (no clock step): not in the future, not older
    // than this connection's previous data.
    if (mono <= now + 1e-4 && mono - levelStartMonoS >= lastActivityS_ - 1e-4) return std::min(mono, now) - levelStartMonoS;
  }
  return now - levelStartMonoS;
}

std::string StreamConnection::after() const {
  return " after " + std::to_string(timeline_.record().choiceChunks) + " chunks";
}

void StreamConnection::abort(const std::string& reason) {
  if (state_ == State::Finished) return;
  timeline_.fail(reason);
  state_ = State::Finished;
  closeSocket();
}

void StreamConnection::complete(bool sawEof) {
  if (state_ == State::Finished) return;
  if (!timeline_.failed()) {
    if (status_ != 0 && status_ != 200)
      timeline_.fail("HTTP " + std::to_string(status_) + ": " + bench::errorMessageFromBody(errorBody_));
    else if (!messageComplete_)
      timeline_.fail(sawEof ? (status_ == 0 ? "server closed the connection before responding"
                                            : "server closed the connection mid-stream" + after())
                            : "response ended early");
    else if (splitter_.hasPartial())
      timeline_.fail("stream ended inside an SSE event" + after());
  }
  // Kept for the next request only after a whole, successful response that the server did not
  // end with "Connection: close" (http-parser reads HTTP/1.1's default and the header).
  reusable_ = !sawEof && messageComplete_ && !trailing_ && !timeline_.failed() && http_should_keep_alive(&parser_);
  state_ = State::Finished;
  if (!reusable_) closeSocket();
}

int StreamConnection::releaseSocket() {
  if (!reusable_ || fd_ < 0) return -1;
  const int fd = fd_;
  fd_ = -1;
  reusable_ = false;
  return fd;
}

bench::RequestRecord StreamConnection::finish() {
  abort("unfinished");  // no-op when already finished
  return timeline_.finish();
}

void StreamConnection::onEvent(std::string& payload) {
  const bench::ChunkInfo info = chunkParser_.parse(payload);
  if (info.hasText) ++textChunks_;
  timeline_.onChunk(info, nowS_);
}

void StreamConnection::onMalformed(std::string_view line) {
  std::string shown(line.substr(0, 60));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  timeline_.fail("malformed SSE line: '" + shown + "'");
}

int StreamConnection::onHeadersComplete(http_parser* p) {
  auto* self = static_cast<StreamConnection*>(p->data);
  self->status_ = static_cast<int>(p->status_code);
  return 0;
}

int StreamConnection::onBody(http_parser* p, const char* at, size_t len) {
  auto* self = static_cast<StreamConnection*>(p->data);
  if (self->status_ != 200) {
    self->errorBody_.append(at, std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, self->errorBody_.size())));
    return 0;
  }
  self->splitter_.feed(std::string_view(at, len), *self);
  return self->timeline_.failed() ? 1 : 0;  // stop parsing a failed stream
}

int StreamConnection::onMessageComplete(http_parser* p) {
  static_cast<StreamConnection*>(p->data)->messageComplete_ = true;
  http_parser_pause(p, 1);  // execute() returns here: what follows is not this response's
  return 0;
}

const http_parser_settings& StreamConnection::settings() {
  static const http_parser_settings s = [] {
    http_parser_settings init{};
    init.on_headers_complete = &StreamConnection::onHeadersComplete;
    init.on_body = &StreamConnection::onBody;
    init.on_message_complete = &StreamConnection::onMessageComplete;
    return init;
  }();
  return s;
}

}  // namespace crosslab::backends
