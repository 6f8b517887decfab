#pragma once
// A server on a box for the window (Benchmarks' "Server on a box"): started over SSH as a
// detached process bound to the box's 127.0.0.1 (vLLM, vLLM in Docker, MLX, or our own
// `crosslab-cli serve`), reached through an SSH tunnel on a free local port, health-
// checked until /health answers 200, and stopped — the process group on the box and the
// tunnel — when asked, when the lab changes, or when its owner goes. The SSH work runs on
// worker threads; nothing here blocks the GUI thread except the bounded stop in the
// destructor.

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>

#include "core/venues/serve_command.h"
#include "core/venues/venue_store.h"

namespace crosslab::ssh {
class PortForward;
}

namespace crosslab::remote {

class RemoteServer : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Starting, Ready, Stopping };
  struct Spec {
    venues::BoxRow box;
    venues::ServeSpec serve;     // adapters' ranks are read on the box when 0
    std::string workDir = "crosslab/serve";  // on the box: output.log, pid
    int healthTimeoutSeconds = 900;
  };

  explicit RemoteServer(QObject* parent = nullptr);
  ~RemoteServer() override;  // stops the server on the box and the tunnel (bounded)

  // False when a server is still there.
  bool start(const Spec& spec);
  // Cancels a start or stops the server; stopped() follows.
  void stop();
  State state() const { return state_; }
  QString baseUrl() const { return baseUrl_; }  // http://127.0.0.1:LOCAL once ready
  const Spec& spec() const { return spec_; }
  QString command() const { return command_; }

 signals:
  void ready(const QString& baseUrl);
  void failed(const QString& error);
  void stopped();
  void logLine(const QString& line);

 private:
  void finishStart(const QString& error, const QString& baseUrl, const QString& command,
                   std::shared_ptr<ssh::PortForward> tunnel);
  void stopOnBox(bool wait);

  Spec spec_;
  State state_ = State::Idle;
  QString baseUrl_, command_;
  std::shared_ptr<ssh::PortForward> tunnel_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  unsigned generation_ = 0;
};

}  // namespace crosslab::remote
