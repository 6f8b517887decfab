#pragma once
// Runs a cpp-httplib server on 127.0.0.1 in a background thread for the life of the
// object (test stand-ins for remote HTTP services).

#include <httplib.h>

#include <thread>

class HttpStandin {
 public:
  HttpStandin() = default;
  ~HttpStandin() { stop(); }
  httplib::Server& server() { return server_; }
  // Binds a free loopback port and starts serving; returns the port (0 on failure).
  int start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return 0;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
    return port_;
  }
  void stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};
