#pragma once
// POSIX signals (SIGTERM, SIGINT) as a Qt signal on the main thread. A signal handler may
// not touch Qt, so it only writes the signal number into a socket pair; a QSocketNotifier
// reads it in the event loop and emits received(). One instance per process.

#include <QObject>
#include <initializer_list>
#include <vector>

class QSocketNotifier;

namespace crosslab::backends {

class UnixSignals : public QObject {
  Q_OBJECT
 public:
  UnixSignals(std::initializer_list<int> signalNumbers, QObject* parent = nullptr);
  ~UnixSignals() override;

 signals:
  void received(int signalNumber);

 private:
  void onReadable();
  QSocketNotifier* notifier_ = nullptr;
  std::vector<int> signals_;
};

}  // namespace crosslab::backends
