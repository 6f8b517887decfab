#pragma once
// The Training panel: the lab's runs (filter, sort), the live loss chart of the selected
// runs (several selected = compared, aligned by step or epoch), progress of the current
// run, a failed or stalled run in red with its reason (and, on a box, what the stall has
// cost at the box's price), and New Run / Stop.
//
// Runs are started, followed and stopped by a RunController (backends/runs): a run is a
// detached process here or on a box, followed through its events.jsonl by the one
// follower and judged by the one watchdog; the store owns its status. Closing the window
// or opening another lab never stops a run: a window that opens the lab follows it again.
// A run started elsewhere (a shell's `crosslab-cli train --lab`) without a launch record
// is judged by its RUN_DIR/process.json (train/run_process.h). The chart reads new metric
// rows by their seq, so an eval loss that lands in an old step is drawn too.

#include <QHash>
#include <QTimer>
#include <QWidget>

#include "backends/runs/run_controller.h"

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
struct NewRunChoice;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kPollMs = 1000;

  explicit TrainingPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~TrainingPanel() override;

  RunsModel* runsModel() const { return model_; }
  LossChart* chart() const { return chart_; }
  QTableView* table() const { return table_; }
  backends::RunController* controller() const { return controller_; }
  QString statusText() const;
  QList<qint64> selectedRuns() const;
  void selectRun(qint64 runId);

  // Registers a run (its row, runs/<name>/recipe.json, its launch record) and starts it
  // here or on its box. 0 and *error when refused (a name or folder the lab has).
  qint64 startRun(const NewRunChoice& choice, QString* error);
  void setOrphanStaleSeconds(double seconds) { orphanStaleSeconds_ = seconds; }

 public slots:
  // Reloads the run list and pulls new metrics of the charted runs from the store.
  void poll();

 private slots:
  void onSelectionChanged();
  void onNewRun();
  void onNewRunFrom(qint64 runId);  // 0: the dialog's own proposal
  void onStop();
  // A failed or stalled run (or the watchdog's verdict on it): a friction entry pre-filled
  // with the reason, the dead minutes and their cost at its box's price.
  void onLogFriction();
  void onRunChanged(qint64 runId);
  void onMessage(qint64 runId, const QString& line);

 private:
  void updateStatus();
  void markOrphanedRuns();
  // For the window's close question (LabSession close guard): the runs this window follows
  // that go on without it, and a start in progress that quitting abandons.
  QString closeConcern(bool quitting) const;

  backends::LabSession* session_;
  backends::RunController* controller_;
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
  QTimer soon_;                     // coalesces polls asked by run changes
  QHash<qint64, qint64> lastSeq_;   // per charted run: the largest metrics seq already plotted
  double orphanStaleSeconds_ = 900;
  QList<qint64> keptSelection_;     // the selection across a reset of the runs list
  bool autoSelected_ = false;       // the newest run was selected once for this lab
};

}  // namespace crosslab::widgets
