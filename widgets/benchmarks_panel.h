#pragma once
// The Benchmarks panel: pick an endpoint, model, levels, output length and price; Run
// drives `crosslab-cli bench` in a child process (never the GUI thread) with a live
// chart, the current level, progress and Stop; results show as the lab's serving table,
// selected rows compare side by side in a bar chart, and the table exports to CSV/JSON.

#include <QWidget>

class QBarSeries;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace crosslab::backends {
class BenchProcess;
class LabSession;
}  // namespace crosslab::backends

namespace crosslab::widgets {

class BenchLiveChart;
class BenchResultsModel;

class BenchmarksPanel : public QWidget {
  Q_OBJECT
 public:
  BenchmarksPanel(backends::LabSession* session, QWidget* parent = nullptr);

  // Starts a sweep with the form's values; false (and a status message) if invalid.
  bool run();
  void stop();
  bool isRunning() const;
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  bool exportJson(const QString& path, QString* error = nullptr) const;

  backends::BenchProcess* process() const { return process_; }
  BenchLiveChart* liveChart() const { return live_; }
  BenchResultsModel* results() const { return results_; }
  int comparedSets() const;
  QString status() const;

 public slots:
  void reload();

 signals:
  void sweepFinished(int exitCode);

 private:
  QWidget* buildForm();
  QWidget* buildResults();
  QStringList sweepArgs() const;
  void onLevelStarted(int concurrency, int planned);
  void onFinished(int exitCode, const QString& error, bool stopped);
  void updateComparison();
  void setStatus(const QString& text);
  void exportWithDialog(bool json);

  backends::LabSession* session_;
  backends::BenchProcess* process_;
  QLineEdit *url_, *model_, *levels_, *label_;
  QComboBox* endpoint_;
  QSpinBox *numPrompts_, *outputLen_;
  QDoubleSpinBox* price_;
  QPushButton *runButton_, *stopButton_;
  QProgressBar* progress_;
  QLabel *levelLabel_, *status_;
  BenchLiveChart* live_;
  BenchResultsModel* results_;
  QTableView* table_;
  QChartView* compare_;
  QBarSeries* bars_;
  int levelIndex_ = 0;
  double timeOffset_ = 0, lastT_ = 0;
};

}  // namespace crosslab::widgets
