#pragma once
// The Training panel: the lab's runs (filter, sort), the live loss chart of the selected
// runs (several selected = compared, aligned by step or epoch), progress of the current
// run, a failed or stalled run in red with its reason, and New Run / Stop for runs that
// this window starts as `crosslab-cli train` child processes (the GUI never trains itself).
// The dead-run watchdog: a child started here is followed by a LocalRunWatch (its output,
// its events.jsonl, its exit, a stall timer); any other local run the store still calls
// running is checked on every poll against its RUN_DIR/process.json (train/run_process.h):
// a recorded trainer process of this host that is gone marks the run failed, and a run
// without a usable record whose folder has not changed for `orphanStaleSeconds` too.

#include <QHash>
#include <QPointer>
#include <QProcess>
#include <QTimer>
#include <QWidget>

#include "widgets/local_run_watch.h"

class QTableView;
class QSortFilterProxyModel;
class QLineEdit;
class QLabel;
class QProgressBar;
class QPlainTextEdit;
class QSlider;
class QCheckBox;
class QComboBox;
class QPushButton;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class LossChart;
class RunsModel;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kPollMs = 1000;

  explicit TrainingPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~TrainingPanel() override;

  RunsModel* runsModel() const { return model_; }
  LossChart* chart() const { return chart_; }
  QTableView* table() const { return table_; }
  QString statusText() const;
  QList<qint64> selectedRuns() const;
  void selectRun(qint64 runId);

  // Starts `crosslab-cli ARGS` as this panel's training child. With `--out RUN_DIR` and
  // `--lab` naming this panel's lab, the run's row is registered first (pending), so
  // that a child dying before its trainer starts still leaves a failed row with a reason.
  bool startTraining(const QStringList& args);
  qint64 childPid() const;
  LocalRunWatch* watch() const { return watch_; }
  // Stall thresholds and tick period of the watchdog of runs started from now on (tests).
  void setWatchOptions(const LocalRunWatch::Options& options) { watchOptions_ = options; }
  void setOrphanStaleSeconds(double seconds) { orphanStaleSeconds_ = seconds; }

 public slots:
  // Reloads the run list and pulls new metrics of the charted runs from the store.
  void poll();

 private slots:
  void onSelectionChanged();
  void onNewRun();
  void onStop();
  // A failed or stalled run (or the watchdog's alert on it): a friction entry pre-filled
  // with the reason, the dead minutes and their cost at its box's price.
  void onLogFriction();
  void onChildOutput();
  void onChildFinished(int exitCode, QProcess::ExitStatus status);
  void onWatchState(crosslab::train::RunState state, const QString& reason);

 private:
  void updateStatus();
  qint64 registerRun(const QStringList& args, QString* runDir);
  void markOrphanedRuns();

  backends::LabSession* session_;
  RunsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
  LossChart* chart_;
  QSlider* smoothing_;
  QCheckBox* logScale_;
  QComboBox* align_;
  QLabel* status_;
  QProgressBar* progress_;
  QPlainTextEdit* output_;
  QPushButton* stop_;
  QPushButton* logFriction_;
  QTimer poll_;
  QHash<qint64, qint64> lastStep_;  // per charted run: the last step already plotted
  QPointer<QProcess> child_;
  QPointer<LocalRunWatch> watch_;
  LocalRunWatch::Options watchOptions_;
  double orphanStaleSeconds_ = 900;
  bool stopRequested_ = false;
  bool autoSelected_ = false;  // the newest run was selected once for this lab
};

}  // namespace crosslab::widgets
