#include "backends/remote/remote_server.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThread>
#include <spdlog/spdlog.h>

#include "backends/remote/box_access.h"
#include "backends/secrets/keyring.h"
#include "backends/remote/health_probe.h"
#include "backends/remote/remote_run.h"
#include "backends/ssh/port_forward.h"

namespace crosslab::remote {

RemoteServer::RemoteServer(QObject* parent) : QObject(parent) {}

RemoteServer::~RemoteServer() {
  if (state_ != State::Idle) {
    if (cancel_) *cancel_ = true;
    stopOnBox(true);  // the window is going: the server on the box goes with it
  }
}

bool RemoteServer::start(const Spec& spec) {
  if (state_ != State::Idle) return false;
  spec_ = spec;
  state_ = State::Starting;
  baseUrl_.clear();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  const unsigned gen = ++generation_;
  QPointer<RemoteServer> self(this);
  auto cancel = cancel_;
  emit logLine(tr("connecting to %1 …").arg(QString::fromStdString(spec.box.name)));
  auto* thread = QThread::create([self, spec, cancel, gen] {
    QString error, url, command;
    std::shared_ptr<ssh::PortForward> tunnel;
    std::unique_ptr<ssh::SshSession> sessionPtr;
    std::unique_ptr<RemoteRun> launched;
    try {
      sessionPtr = std::make_unique<ssh::SshSession>(boxTarget(spec.box));
      auto& session = *sessionPtr;
      session.connect();
      venues::ServeSpec s = spec.serve;
      for (auto& a : s.adapters)
        if (a.rank == 0) {  // vLLM's --max-lora-rank needs each adapter's r
          const auto r = session.run("cat " + ssh::shellQuote(a.path + "/adapter_config.json"));
          if (r.status != 0) throw std::runtime_error("no adapter_config.json in " + a.path + " on the box");
          a.rank = venues::adapterRankFromConfig(r.out);
        }
      command = QString::fromStdString(venues::shellJoin(venues::serveArgv(s)));
      secrets::outgoingGuard().checkText(command.toStdString(), "the serving command");
      QMetaObject::invokeMethod(qApp, [self, command] {
        if (self) emit self->logLine(tr("on the box: %1").arg(command));
      });
      launched = std::make_unique<RemoteRun>(session, spec.workDir, "serve-events.jsonl");
      auto& server = *launched;
      server.launch(command.toStdString());
      tunnel = std::make_shared<ssh::PortForward>(boxTarget(spec.box), 0, "127.0.0.1", s.port);
      const int local = tunnel->start();
      url = QString("http://127.0.0.1:%1").arg(local);
      std::string output;
      const auto alive = [&] {
        if (*cancel) return false;
        const auto p = server.poll();
        output += p.output;
        return p.alive && !p.exitStatus;
      };
      const int status = waitForHealthy(url + "/health", spec.healthTimeoutSeconds, 500, alive);
      if (*cancel) throw std::runtime_error("cancelled");
      if (status != 200) {
        if (output.size() > 600) output = output.substr(output.size() - 600);
        throw std::runtime_error("the server never answered /health with 200 (last " + std::to_string(status) +
                                 "); its output ends: " + output);
      }
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
      if (tunnel) tunnel->stop();
      tunnel.reset();
      // A server this start launched never outlives a failed or cancelled start.
      if (launched) try {
          launched->stop(5);
        } catch (const std::exception&) {
        }
    }
    QMetaObject::invokeMethod(qApp, [self, error, url, command, tunnel, gen] {
      if (self && self->generation_ == gen) self->finishStart(error, url, command, tunnel);
      else if (tunnel) tunnel->stop();
    });
  });
  connect(thread, &QThread::finished, thread, &QObject::deleteLater);
  thread->start();
  return true;
}

void RemoteServer::finishStart(const QString& error, const QString& baseUrl, const QString& command,
                               std::shared_ptr<ssh::PortForward> tunnel) {
  command_ = command;
  if (state_ == State::Stopping) {  // stop() came while starting: the server is being taken down
    if (tunnel) tunnel->stop();
    return;
  }
  if (!error.isEmpty()) {
    stopOnBox(false);
    state_ = State::Idle;
    emit failed(error);
    return;
  }
  tunnel_ = std::move(tunnel);
  baseUrl_ = baseUrl;
  state_ = State::Ready;
  emit ready(baseUrl_);
}

void RemoteServer::stop() {
  if (state_ == State::Idle || state_ == State::Stopping) return;
  if (cancel_) *cancel_ = true;
  state_ = State::Stopping;
  emit logLine(tr("stopping the server on %1 …").arg(QString::fromStdString(spec_.box.name)));
  stopOnBox(false);
}

// SIGTERM to the server, a short grace, SIGKILL to its process group; the tunnel closes.
void RemoteServer::stopOnBox(bool wait) {
  if (tunnel_) tunnel_->stop();
  tunnel_.reset();
  baseUrl_.clear();
  QPointer<RemoteServer> self(this);
  const Spec spec = spec_;
  const unsigned gen = ++generation_;
  auto work = [spec] {
    try {
      ssh::SshSession session(boxTarget(spec.box));
      session.connect();
      RemoteRun(session, spec.workDir, "serve-events.jsonl").stop(10);
      return QString();
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  };
  if (wait) {
    const QString error = work();
    if (!error.isEmpty()) spdlog::warn("stopping the server on {}: {}", spec.box.name, error.toStdString());
    state_ = State::Idle;
    return;
  }
  auto* thread = QThread::create([self, work, gen] {
    const QString error = work();
    QMetaObject::invokeMethod(qApp, [self, error, gen] {
      if (!self || self->generation_ != gen) return;
      if (!error.isEmpty()) emit self->logLine(tr("could not stop the server on the box: %1").arg(error));
      const bool wasStopping = self->state_ == State::Stopping;
      self->state_ = State::Idle;
      if (wasStopping) emit self->stopped();
    });
  });
  connect(thread, &QThread::finished, thread, &QObject::deleteLater);
  thread->start();
}

}  // namespace crosslab::remote
