#pragma once
// A handler's own connection, for noticing a client that hung up while nothing is written to it.
//
// cpp-httplib 0.11 hands a handler its connection's addresses (Request::local_addr, local_port,
// remote_addr, remote_port) but not its socket. The socket is found among this process's
// descriptors by those four: the connection thread holds it open while the handler runs, so the
// match is unique and stays valid until the handler returns.
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

}  // namespace crosslab::serve
