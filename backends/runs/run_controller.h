#pragma once
// Starts, follows and stops the lab's runs for the window, wherever they train — this
// machine or a box — without ever blocking the GUI thread: a worker thread owns the SSH
// sessions, the detached runs (RemoteRun) and their followers (RunFollower), and its own
// connection to the lab. A run is a detached process: closing the window or opening
// another lab stops following it, never the run; a window that opens the lab again picks
// every active run up from its launch record (runs.launch_json). Stop is the only way to
// end one from here, and it stops it cleanly (SIGTERM: our trainer writes a checkpoint).

#include <QHash>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>

#include "backends/runs/run_launch.h"
#include "core/train/run_monitor.h"

class QThread;

namespace crosslab::backends {

class RunWorker;

// What the follower of one run knows now (the store knows the rest).
struct FollowInfo {
  qint64 runId = 0;
  train::RunStatus status = train::RunStatus::Pending;  // the watchdog's verdict
  QString reason;
  QString phase;            // "pushing weights 12.0 / 40.0 MB", "launching", "following", "fetching the adapter", "lost the box: …"
  QStringList lastLines;    // the run's last output/event lines
  double secondsSinceProgress = 0;
  double stallThreshold = 0;
  double costWhileDead = 0;  // USD at the box's price since the last progress (stalled/failed)
  double pricePerHour = 0;
  bool following = false;    // false once the follower let go (run over, lab closed)
};

// A run to start: its row exists (pending) and RUN_DIR/recipe.json is written.
struct StartRequest {
  qint64 runId = 0;
  RunLaunch launch;
  QString recipeFile;      // local RUN_DIR/recipe.json
  QString modelDir;        // local model folder (pushed to a box when missing there)
  QString program;         // crosslab-cli here; on a box the recipe's launcher or the engine's name
};

class RunController : public QObject {
  Q_OBJECT
 public:
  struct Options {
    train::RunMonitorOptions monitor;
    int tickMs = 1000;       // how often each run is polled
    int stopGraceSeconds = 60;  // SIGTERM, then this long for the checkpoint, then SIGKILL
  };

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  void setOptions(const Options& options);
  // Follows every active run of the lab at `labPath` (empty: none). Runs of the previous
  // lab are left running.
  void setLab(const QString& labPath);
  void start(const StartRequest& request);
  void stop(qint64 runId);
  // The last FollowInfo of a run, or a default one (following = false).
  FollowInfo info(qint64 runId) const;
  bool following(qint64 runId) const { return info(runId).following; }

 signals:
  // The follower of `runId` saw something (steps, output, a verdict, a phase).
  void runChanged(qint64 runId);
  // A progress or output line worth showing (launch steps, the run's output).
  void message(qint64 runId, const QString& line);

 private slots:
  void onInfo(const crosslab::backends::FollowInfo& info);

 private:
  QThread* thread_;
  RunWorker* worker_;
  QHash<qint64, FollowInfo> infos_;
};

}  // namespace crosslab::backends

Q_DECLARE_METATYPE(crosslab::backends::FollowInfo)
Q_DECLARE_METATYPE(crosslab::backends::StartRequest)
