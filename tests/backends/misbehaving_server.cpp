#include "misbehaving_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

MisbehavingServer::Act MisbehavingServer::reply(int status, const std::string& body, const std::string& extraHeaders) {
  return {false, "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n" + extraHeaders + "\r\n" + body};
}

MisbehavingServer::Act MisbehavingServer::cutReply(const std::string& body, std::size_t promised) {
  return {false, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(promised) +
                     "\r\nConnection: close\r\n\r\n" + body};
}

void MisbehavingServer::script(std::vector<Act> acts) {
  std::lock_guard<std::mutex> lock(mutex_);
  acts_ = std::move(acts);
  next_ = 0;
}

MisbehavingServer::Act MisbehavingServer::nextAct() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (acts_.empty()) return silence();
  const Act a = acts_[std::min(next_, acts_.size() - 1)];
  ++next_;
  return a;
}

int MisbehavingServer::start() {
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) return 0;
  const int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 16) != 0) return 0;
  socklen_t len = sizeof addr;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] {
    while (!stop_) {
      pollfd p{listenFd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  });
  return port_;
}

void MisbehavingServer::serve(int fd) {
  // One request's headers (bodies here are small and arrive with them or not at all).
  std::string in;
  char buf[4096];
  while (!stop_ && in.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  if (in.find("\r\n\r\n") != std::string::npos) {
    ++requests_;
    const Act act = nextAct();
    if (act.silent) {
      while (!stop_) {  // hold the connection open; drain whatever comes
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0 && ::read(fd, buf, sizeof buf) <= 0) break;
      }
    } else {
      size_t sent = 0;
      while (sent < act.bytes.size()) {
        const ssize_t n = ::send(fd, act.bytes.data() + sent, act.bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    }
  }
  ::close(fd);
}

void MisbehavingServer::stop() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
  if (listenFd_ >= 0) ::close(listenFd_);
  listenFd_ = -1;
}
