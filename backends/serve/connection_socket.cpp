#include "backends/serve/connection_socket.h"

#include <httplib.h>

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

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

}  // namespace crosslab::serve
