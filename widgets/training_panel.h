#pragma once
// The Training panel: the lab's runs (filter, sort), the live loss chart of the selected
// runs (several selected = compared, aligned by step or epoch), progress of the current
// run, a failed or stalled run in red with its reason, and New Run / Stop for runs that
// this window starts as `crosslab-cli train` child processes (the GUI never trains itself).

#include <QHash>
#include <QPointer>
#include <QProcess>
#include <QTimer>
#include <QWidget>

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

  // Starts `crosslab-cli ARGS` as this panel's training child.
  bool startTraining(const QStringList& args);

 public slots:
  // Reloads the run list and pulls new metrics of the charted runs from the store.
  void poll();

 private slots:
  void onSelectionChanged();
  void onNewRun();
  void onStop();
  void onChildOutput();
  void onChildFinished(int exitCode, QProcess::ExitStatus status);

 private:
  void updateStatus();

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
  QTimer poll_;
  QHash<qint64, qint64> lastStep_;  // per charted run: the last step already plotted
  QPointer<QProcess> child_;
  bool autoSelected_ = false;  // the newest run was selected once for this lab
};

}  // namespace crosslab::widgets
