#include "backends/serve/connection_socket.h"

#include <httplib.h>

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace crosslab::serve {
namespace {

struct Endpoint {
  std::string host;
  int port = -1;
};

// The port of an IPv4 or IPv6 address; -1 for any other family.
int portOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

// As httplib writes an address into a Request (getnameinfo, NI_NUMERICHOST): the same bytes.
bool sameAddress(const sockaddr_storage& a, socklen_t len, const Endpoint& e) {
  if (portOf(a) != e.port) return false;
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
    return false;
  return e.host == host;
}

bool matches(int fd, const Endpoint& local, const Endpoint& remote) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !sameAddress(a, len, remote)) return false;
  len = sizeof a;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && sameAddress(a, len, local);
}

}  // namespace

int connectionSocket(const httplib::Request& q) {
  const Endpoint local{q.local_addr, q.local_port}, remote{q.remote_addr, q.remote_port};
  if (local.port < 0 || remote.port < 0) return -1;
  thread_local int last = -1;
  if (last >= 0 && matches(last, local, remote)) return last;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (matches(int(fd), local, remote)) {  // getpeername fails on a descriptor that is no socket
      found = int(fd);
      break;
    }
  }
  closedir(dir);
  if (found >= 0) last = found;
  return found;
}

bool peerClosed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && peerClosedIn(p.revents);
}

bool peerClosedIn(short revents) { return (revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0; }

bool writeChunk(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  if (data.empty()) return true;  // an empty chunk would end the body
  char head[24];
  const int headLen = std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  static char crlf[] = "\r\n";
  iovec iov[3] = {{head, size_t(headLen)}, {const_cast<char*>(data.data()), data.size()}, {crlf, 2}};
  iovec* next = iov;
  size_t left = 3;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (left > 0) {
    msghdr msg{};
    msg.msg_iov = next;
    msg.msg_iovlen = left;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // full: wait for room
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (wait.count() <= 0) return false;
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, int(wait.count())) < 0 && errno != EINTR) return false;
      continue;
    }
    if (n < 0) return false;  // EPIPE, ECONNRESET: the client left
    for (size_t sent = size_t(n); sent > 0;) {  // past what went, in part or in whole
      const size_t take = std::min(sent, next->iov_len);
      next->iov_base = static_cast<char*>(next->iov_base) + take;
      next->iov_len -= take;
      sent -= take;
      if (next->iov_len == 0) ++next, --left;
    }
  }
  return true;
}

}  // namespace crosslab::serve
