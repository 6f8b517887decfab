#include "backends/ssh/port_forward.h"

#include <arpa/inet.h>
#include <libssh/libssh.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <list>
#include <vector>

namespace crosslab::ssh {
namespace {

constexpr int kKeepaliveSeconds = 30;

// One accepted local connection and its SSH channel.
struct Link {
  int fd = -1;
  ssh_channel channel = nullptr;
  bool localClosed = false;
};

void closeLink(Link& l) {
  if (l.channel) {
    ssh_channel_close(l.channel);
    ssh_channel_free(l.channel);
  }
  if (l.fd >= 0) ::close(l.fd);
  l.fd = -1;
  l.channel = nullptr;
}

// Moves bytes both ways; false when the link is finished.
bool pump(Link& l, std::vector<char>& buf, bool fdReadable) {
  if (fdReadable && !l.localClosed) {
    const ssize_t n = ::recv(l.fd, buf.data(), buf.size(), 0);
    if (n > 0) {
      if (ssh_channel_write(l.channel, buf.data(), static_cast<uint32_t>(n)) != n) return false;
    } else {
      l.localClosed = true;
      ssh_channel_send_eof(l.channel);
    }
  }
  int m = 0;
  while ((m = ssh_channel_read_nonblocking(l.channel, buf.data(), static_cast<uint32_t>(buf.size()), 0)) > 0) {
    const char* p = buf.data();
    while (m > 0) {
      const ssize_t w = ::send(l.fd, p, static_cast<size_t>(m), MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      m -= static_cast<int>(w);
    }
  }
  if (m == SSH_ERROR) return false;
  return !(ssh_channel_is_eof(l.channel) || ssh_channel_is_closed(l.channel));
}

}  // namespace

PortForward::PortForward(SshTarget target, int localPort, std::string remoteHost, int remotePort)
    : session_(std::make_unique<SshSession>(std::move(target))),
      localPort_(localPort),
      remoteHost_(std::move(remoteHost)),
      remotePort_(remotePort) {}

PortForward::~PortForward() { stop(); }

int PortForward::start() {
  session_->connect();
  listenFd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listenFd_ < 0) throw SshError("cannot create a socket");
  int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(localPort_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only: the tunnel is for this machine
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listenFd_);
    listenFd_ = -1;
    throw SshError("cannot listen on 127.0.0.1:" + std::to_string(localPort_) + ": " + why);
  }
  socklen_t len = sizeof addr;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  localPort_ = ntohs(addr.sin_port);
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
  return localPort_;
}

void PortForward::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listenFd_ >= 0) ::close(listenFd_);
  listenFd_ = -1;
  running_ = false;
}

std::string PortForward::lastError() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return lastError_;
}

void PortForward::setError(const std::string& e) {
  std::lock_guard<std::mutex> lock(errorMutex_);
  lastError_ = e;
}

void PortForward::loop() {
  std::list<Link> links;
  std::vector<char> buf(32 * 1024);
  auto lastKeepalive = std::chrono::steady_clock::now();
  while (!stop_) {
    std::vector<pollfd> fds{{listenFd_, POLLIN, 0}};
    for (auto& l : links) fds.push_back({l.fd, static_cast<short>(l.localClosed ? 0 : POLLIN), 0});
    // Channels are not pollable fds here: a short timeout keeps remote->local latency low.
    ::poll(fds.data(), fds.size(), links.empty() ? 100 : 5);
    if (fds[0].revents & POLLIN) {
      const int fd = ::accept(listenFd_, nullptr, nullptr);
      if (fd >= 0) {
        try {
          if (links.empty()) session_->ensureConnected();  // reconnect only between connections
        } catch (const std::exception& e) {
          setError(e.what());
        }
        ssh_channel ch = session_->isConnected() ? ssh_channel_new(session_->handle()) : nullptr;
        if (ch && ssh_channel_open_forward(ch, remoteHost_.c_str(), remotePort_, "127.0.0.1", localPort_) == SSH_OK) {
          links.push_back({fd, ch, false});
          ++served_;
        } else {
          setError("the box refused to open " + remoteHost_ + ":" + std::to_string(remotePort_));
          if (ch) ssh_channel_free(ch);
          ::close(fd);
        }
      }
    }
    size_t i = 1;
    for (auto it = links.begin(); it != links.end(); ++i) {
      const bool readable = fds.size() > i && (fds[i].revents & (POLLIN | POLLHUP | POLLERR));
      if (!pump(*it, buf, readable)) {
        closeLink(*it);
        it = links.erase(it);
      } else {
        ++it;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - lastKeepalive > std::chrono::seconds(kKeepaliveSeconds)) {
      session_->keepalive();
      lastKeepalive = now;
    }
  }
  for (auto& l : links) closeLink(l);
  running_ = false;
}

}  // namespace crosslab::ssh
