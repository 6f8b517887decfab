#pragma once
// A handler's own connection, for noticing a client that hung up while nothing is written to it.
//
// cpp-httplib 0.11 hands a handler its connection's addresses (Request::local_addr, local_port,
// remote_addr, remote_port) but not its socket. The socket is found among this process's
// descriptors by those four: the connection thread holds it open while the handler runs, so the
// match is unique and stays valid until the handler returns.
#include <chrono>
#include <string_view>

namespace httplib {
struct Request;
}

namespace crosslab::serve {

// The socket of `q`'s connection, or -1 when none matches. The last one found on the calling
// thread is tried first (a keep-alive connection's requests run on one thread): two system calls
// then, otherwise a pass over /proc/self/fd.
int connectionSocket(const httplib::Request& q);

// Whether the peer has closed its end of `fd` (a FIN: POLLRDHUP) or the connection is reset or
// broken (POLLHUP, POLLERR). Does not wait; data the client sent meanwhile does not count.
bool peerClosed(int fd);
// The same judgement on what poll() returned for such a socket, watched for POLLRDHUP.
bool peerClosedIn(short revents);

// Writes `data` to `fd` as one chunk of a chunked HTTP/1.1 body ("<size in hex>\r\n", the data,
// "\r\n"): the bytes httplib's DataSink::write sends for an uncompressed chunked response, in
// one sendmsg() where the socket has room. httplib's write polls the socket twice before each
// send (is_writable: a wait for room, then a check for a closed peer) and copies the chunk
// twice; a streaming server writes tens of thousands of chunks a second. Where the socket is
// full it waits for room, up to `timeout` in all (httplib's write timeout). False when the
// connection failed or the time ran out; the chunk may then be cut, and the connection must be
// dropped (as httplib drops it after a failed write).
bool writeChunk(int fd, std::string_view data, std::chrono::milliseconds timeout);

}  // namespace crosslab::serve
