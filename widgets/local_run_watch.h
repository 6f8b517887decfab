#pragma once
// The dead-run watchdog of a local training run: one train::RunMonitor fed with the
// child process's output, the run's events.jsonl (tailed) and its exit, ticked on a timer
// for stalls. When the monitor calls the run failed or stalled, the run's row in the lab
// store says so (with the reason, and a `train.watchdog` event holding the last lines),
// unless the trainer already recorded its own end; a stalled run that comes back to life
// is marked running again.

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <memory>

#include "core/train/run_monitor.h"

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class LocalRunWatch : public QObject {
  Q_OBJECT
 public:
  struct Options {
    train::RunMonitorOptions monitor;
    int tickMs = 1000;  // how often events.jsonl is read and a stall is checked
  };

  // `runDir` may be empty (no events file); `runId` 0 when the run has no store row.
  LocalRunWatch(backends::LabSession* session, qint64 runId, const QString& runDir, Options options,
                QObject* parent = nullptr);
  ~LocalRunWatch() override;

  void feedOutput(const QByteArray& chunk);
  // The child ended; `userStopped` when Stop asked it to.
  void processFinished(int exitCode, QProcess::ExitStatus status, bool userStopped);

  train::RunState state() const { return monitor_->state(); }
  QString reason() const { return QString::fromStdString(monitor_->reason()); }
  QStringList lastLines(int n) const;
  qint64 runId() const { return runId_; }
  bool ended() const { return ended_; }

 public slots:
  void tick();

 signals:
  // The monitor's verdict changed (to failed, stalled, running again, or finished).
  void stateChanged(crosslab::train::RunState state, const QString& reason);

 private:
  void readEvents();
  void publish();
  std::string storeStatus() const;

  backends::LabSession* session_;
  qint64 runId_;
  QString eventsPath_;
  qint64 eventsOffset_ = 0;
  QByteArray eventsPartial_;
  std::unique_ptr<train::RunMonitor> monitor_;
  train::RunState published_ = train::RunState::Waiting;
  std::string publishedReason_;
  bool markedByUs_ = false;  // the store's failed/stalled status is ours, not the trainer's
  QTimer timer_;
  bool ended_ = false;
};

}  // namespace crosslab::widgets
