#pragma once
// One benchmark request on its own non-blocking socket: connect, send the POST, parse
// the HTTP response with http-parser and its SSE body into a RequestTimeline. Driven by
// StreamClient's epoll loop; never blocks.

#include <http_parser.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "core/bench/chunk_parser.h"
#include "core/bench/request_timeline.h"
#include "core/bench/sse_splitter.h"

namespace crosslab::backends {

class StreamConnection : private bench::SseSplitter::Handler {
 public:
  enum class State { Connecting, Sending, Receiving, Finished };

  // `startS`: issue time in level seconds; `request`: the full HTTP request bytes.
  StreamConnection(size_t index, double startS, std::int64_t inputLen, std::string request,
                   bench::ChunkParser& parser, std::int64_t& textChunkCounter);
  ~StreamConnection() override;
  StreamConnection(const StreamConnection&) = delete;
  StreamConnection& operator=(const StreamConnection&) = delete;

  // Starts a non-blocking connect. On failure the connection is already Finished.
  void connectTo(const sockaddr_storage& addr, socklen_t len, const std::string& where);
  // Socket became writable / readable; `nowS` is the level clock at this wake-up.
  void onWritable(double nowS);
  // `realToMonoS` = CLOCK_MONOTONIC − CLOCK_REALTIME, for the kernel's receive timestamps.
  void onReadable(char* buffer, size_t capacity, double levelStartMonoS, double realToMonoS);
  // Fails the request (timeout, abort) and closes the socket.
  void abort(const std::string& reason);

  int fd() const { return fd_; }
  size_t index() const { return index_; }
  State state() const { return state_; }
  bool wantsWrite() const { return state_ == State::Connecting || state_ == State::Sending; }
  bool decoding() const { return timeline_.started() && state_ != State::Finished; }
  double lastActivityS() const { return lastActivityS_; }
  double lastChunkS() const { return timeline_.lastChunkS(); }
  bench::RequestRecord finish();

 private:
  void onEvent(std::string& payload) override;
  void onMalformed(std::string_view line) override;
  void complete(bool sawEof);
  void closeSocket();
  std::string after() const;  // " after N chunks"
  double receiveTime(const msghdr& msg, double levelStartMonoS, double realToMonoS) const;
  static const http_parser_settings& settings();
  static int onHeadersComplete(http_parser* p);
  static int onBody(http_parser* p, const char* at, size_t len);
  static int onMessageComplete(http_parser* p);

  size_t index_;
  int fd_ = -1;
  State state_ = State::Connecting;
  std::string request_;
  size_t sent_ = 0;
  std::string where_;  // "host:port" for messages
  http_parser parser_{};
  bench::SseSplitter splitter_;
  bench::RequestTimeline timeline_;
  bench::ChunkParser& chunkParser_;
  std::int64_t& textChunks_;
  int status_ = 0;
  std::string errorBody_;  // non-200 body, capped
  bool messageComplete_ = false;
  double nowS_ = 0;            // timestamp of the read being parsed
  double lastActivityS_ = 0;
};

}  // namespace crosslab::backends
