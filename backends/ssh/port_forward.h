#pragma once
// Local port forwarding (ssh -L): listens on 127.0.0.1:LOCAL and carries every
// connection through the SSH tunnel to REMOTE_HOST:REMOTE_PORT as the box sees it, so a
// server bound to the box's 127.0.0.1 is reachable without opening a port. Owns its own
// connection and thread (libssh sessions are single-threaded); sends keepalives and
// reconnects between connections when the link dropped.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backends/ssh/ssh_session.h"

namespace crosslab::ssh {

class PortForward {
 public:
  PortForward(SshTarget target, int localPort, std::string remoteHost, int remotePort);
  ~PortForward();
  PortForward(const PortForward&) = delete;
  PortForward& operator=(const PortForward&) = delete;

  // Connects (throws SshError/HostKeyError), binds the local port (0 = any free one)
  // and starts forwarding. Returns the bound local port.
  int start();
  void stop();
  int localPort() const { return localPort_; }
  bool running() const { return running_.load(); }
  // Connections carried so far (for status lines and tests).
  int connectionsServed() const { return served_.load(); }
  std::string lastError() const;

 private:
  void loop();
  void setError(const std::string& e);

  std::unique_ptr<SshSession> session_;
  int localPort_;
  std::string remoteHost_;
  int remotePort_;
  int listenFd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<int> served_{0};
  mutable std::mutex errorMutex_;
  std::string lastError_;
};

}  // namespace crosslab::ssh
