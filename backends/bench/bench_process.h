#pragma once
// Runs `crosslab-cli bench --progress …` as a child process for the GUI and turns its
// JSON Lines progress events into signals. The sweep runs in its own process, so the
// GUI thread only reads lines; Stop sends SIGTERM and the CLI keeps finished levels.

#include <QJsonObject>
#include <QObject>
#include <QProcess>
#include <QStringList>

namespace crosslab::backends {

class BenchProcess : public QObject {
  Q_OBJECT
 public:
  explicit BenchProcess(QObject* parent = nullptr);
  ~BenchProcess() override;

  // The crosslab-cli to run: backends::cliExecutable() ($CROSSLAB_CLI, else beside this
  // program, else on PATH) — the same one the rest of the window runs.
  static QString defaultCliPath();
  void setCliPath(const QString& path) { cliPath_ = path; }

  // `args` are bench's options (--progress is added). Returns false if one is running.
  bool start(const QStringList& args);
  void stop();
  bool isRunning() const { return process_->state() != QProcess::NotRunning; }

 signals:
  void levelStarted(int concurrency, int planned);
  void tick(int concurrency, double t, double aggregateTokS, double perStreamTokS, int done, int failed,
            int planned);
  void requestDone(int concurrency, double t, double ttftMs, bool ok, const QString& error);
  void levelDone(const QJsonObject& result);
  void sweepDone(const QJsonObject& summary);
  // exitCode 0 = the sweep ran; otherwise `error` is the CLI's one-line reason.
  void finished(int exitCode, const QString& error, bool stopped);

 private:
  void readLines();
  void dispatch(const QJsonObject& event);

  QProcess* process_;
  QString cliPath_;
  QByteArray pending_;
  bool stopRequested_ = false;
};

}  // namespace crosslab::backends
