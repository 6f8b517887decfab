#pragma once
// A loopback HTTP server that misbehaves on purpose, for provider-client tests: each
// connection reads one request's headers, then plays the next scripted act — stay silent
// (connection open, no byte sent, until the server stops), send raw bytes and close
// (a 429 with Retry-After, a reply cut in the middle of its body, a good reply). Plain
// POSIX sockets: what it sends is exactly what the test wrote.

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

class MisbehavingServer {
 public:
  struct Act {
    bool silent = false;  // accept, read the request, never answer
    std::string bytes;    // otherwise: send these, then close
  };
  static Act silence() { return {true, {}}; }
  static Act reply(int status, const std::string& body, const std::string& extraHeaders = {});
  // Headers promising `promised` body bytes, then only `body`, then close.
  static Act cutReply(const std::string& body, std::size_t promised);

  MisbehavingServer() = default;
  ~MisbehavingServer() { stop(); }
  // Acts are played in order; after the last one, the last act repeats.
  void script(std::vector<Act> acts);
  int start();  // the port
  void stop();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api"; }
  int requests() const { return requests_.load(); }

 private:
  void serve(int fd);
  Act nextAct();
  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::vector<Act> acts_;
  size_t next_ = 0;
};
