#pragma once
// One benchmark request on a non-blocking socket, its own or one kept alive from an earlier
// request: connect (or adopt), send the POST, parse the HTTP response with http-parser and its
// SSE body into a RequestTimeline. Driven by StreamClient's epoll loop; never blocks. A response
// that ended whole, with nothing after it, on a connection the server keeps open, leaves its
// socket to be reused (releaseSocket) instead of closing it.

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
  // Sends on `fd`, a connection kept open after an earlier response (the caller checked that
  // the server has not closed it). The connection owns it from now on.
  void adopt(int fd, const std::string& where);
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
  // Once Finished: the socket, when the server keeps the connection open for another request
  // (the caller owns it then), else -1.
  int releaseSocket();
  // Once Finished: the request went out on a reused connection that the server had closed (no
  // byte of a response came back: an end of file or a reset). The server answered nothing: the
  // race between its idle timeout and the request is the client pool's, not a failure of the
  // server's, so StreamClient sends the request again on a new connection. (aiohttp retries
  // only idempotent methods there, and would count this POST as failed.)
  bool lostToStaleConnection() const { return stale_; }
  double startS() const { return timeline_.record().startS; }  // issue time, level clock

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

  void lost(const std::string& reason);  // a reset or end of file before any response byte

  size_t index_;
  int fd_ = -1;
  bool reused_ = false;     // adopted from an earlier request
  bool reusable_ = false;   // finished with the connection open for another request
  bool stale_ = false;      // see lostToStaleConnection()
  bool answered_ = false;   // a byte of the response came back
  bool trailing_ = false;   // bytes after the end of the response (not ours: never reused)
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
