#pragma once
// A `crosslab-cli serve` child process for the GUI: started on a free loopback port
// (--port 0; the port is read from its "listening on" line), then /health is polled
// asynchronously until it answers 200. Nothing here blocks the GUI thread. The child's
// stderr and stdout lines come out as logLine(); one that exits on its own reports its
// last lines as the error. stop() cancels a start or ends a running server (SIGTERM,
// SIGKILL after a grace period); the destructor does the same, waiting for the child.

#include <QObject>
#include <QProcess>
#include <QStringList>

class QNetworkAccessManager;
class QTimer;

namespace crosslab::backends {

class LocalServeProcess : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Starting, Ready, Stopping };

  explicit LocalServeProcess(QObject* parent = nullptr);
  ~LocalServeProcess() override;

  // The crosslab-cli to run; default backends::cliExecutable() ($CROSSLAB_CLI honoured).
  void setCliPath(const QString& path) { cliPath_ = path; }
  QString cliPath() const { return cliPath_; }

  // Runs `serve <serveArgs> --host 127.0.0.1 --port 0`. False when a child is still there.
  bool start(const QStringList& serveArgs);
  // Cancels a start or stops the server; stopped() follows once the child is gone.
  void stop();

  State state() const { return state_; }
  bool isRunning() const { return process_->state() != QProcess::NotRunning; }
  QString baseUrl() const { return baseUrl_; }  // http://127.0.0.1:PORT once the port is known
  QStringList serveArgs() const { return args_; }
  qint64 processId() const { return process_->processId(); }
  QStringList lastLines() const { return lines_; }

 signals:
  void ready(const QString& baseUrl);  // /health answered 200
  void failed(const QString& error);   // could not start, or exited without stop()
  void stopped();                      // the child is gone after stop()
  void logLine(const QString& line);

 private:
  void readOutput(QProcess::ProcessChannel channel);
  void probeHealth();
  void onFinished(int exitCode, QProcess::ExitStatus status);

  QProcess* process_;
  QNetworkAccessManager* net_;
  QTimer* probeTimer_;
  QTimer* killTimer_;
  QString cliPath_;
  QStringList args_;
  QString baseUrl_;
  QByteArray pendingOut_, pendingErr_;
  QStringList lines_;  // the last lines the child wrote
  State state_ = State::Idle;
  bool probing_ = false;
};

}  // namespace crosslab::backends
