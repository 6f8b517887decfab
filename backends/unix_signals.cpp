#include "backends/unix_signals.h"

#include <QSocketNotifier>
#include <spdlog/spdlog.h>

#include <csignal>
#include <sys/socket.h>
#include <unistd.h>

namespace crosslab::backends {
namespace {

int gPipe[2] = {-1, -1};  // [0] read by the notifier, [1] written by the handler

extern "C" void onSignal(int signalNumber) {
  const unsigned char byte = static_cast<unsigned char>(signalNumber);
  [[maybe_unused]] const ssize_t n = ::write(gPipe[1], &byte, 1);  // async-signal-safe
}

}  // namespace

UnixSignals::UnixSignals(std::initializer_list<int> signalNumbers, QObject* parent) : QObject(parent) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gPipe) != 0) {
    spdlog::warn("signals: socketpair failed; SIGTERM/SIGINT end the process without a clean quit");
    return;
  }
  notifier_ = new QSocketNotifier(gPipe[0], QSocketNotifier::Read, this);
  connect(notifier_, &QSocketNotifier::activated, this, &UnixSignals::onReadable);
  for (int s : signalNumbers) {
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(s, &sa, nullptr);
    signals_.push_back(s);
  }
}

UnixSignals::~UnixSignals() {
  for (int s : signals_) std::signal(s, SIG_DFL);
  if (gPipe[0] < 0) return;
  delete notifier_;
  ::close(gPipe[0]);
  ::close(gPipe[1]);
  gPipe[0] = gPipe[1] = -1;
}

void UnixSignals::onReadable() {
  unsigned char byte = 0;
  if (::read(gPipe[0], &byte, 1) == 1) emit received(byte);
}

}  // namespace crosslab::backends
