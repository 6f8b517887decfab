#pragma once
// The Benchmarks panel: pick an endpoint, model, levels, output length and price; Run
// drives `crosslab-cli bench` in a child process (never the GUI thread) with a live
// chart, the current level, progress and Stop; results show as the lab's serving table,
// selected rows compare side by side in a bar chart, and the table exports to CSV/JSON.

#include <QWidget>
#include <cstdint>
#include <set>

class QBarSeries;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;

namespace crosslab::backends {
class BenchProcess;
class LabSession;
class LocalServeProcess;
class ServerMetricsPoller;
}  // namespace crosslab::backends

namespace crosslab::widgets {

class BenchLiveChart;
class BenchResultsModel;
class BoxServerForm;

class BenchmarksPanel : public QWidget {
  Q_OBJECT
 public:
  BenchmarksPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~BenchmarksPanel() override;  // a local server still running is stopped (and waited for)

  // Starts a sweep with the form's values; false (and a status message) if invalid. With
  // the local-server endpoint it first starts the server (unless the same one is up).
  bool run();
  // Stops the sweep, or cancels a local server that is still starting.
  void stop();
  // Stops the local server (also done when the lab changes and when the panel goes away).
  void stopServer();
  bool isRunning() const;
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  bool exportJson(const QString& path, QString* error = nullptr) const;

  backends::BenchProcess* process() const { return process_; }
  backends::LocalServeProcess* server() const { return server_; }
  BoxServerForm* boxServer() const { return boxForm_; }
  BenchLiveChart* liveChart() const { return live_; }
  BenchResultsModel* results() const { return results_; }
  int comparedSets() const;
  QString status() const;
  // The server's own view of the sweep, from its /metrics (core/bench/server_metrics.h).
  QString serverView() const;
  static constexpr int kCompareOnOpen = 4;  // rows compared when none is selected

 public slots:
  void reload();

 signals:
  void sweepFinished(int exitCode);

 private:
  QWidget* buildForm();
  QWidget* buildResults();
  QWidget* buildComparison(QWidget* parent);
  QWidget* buildLocalServerBox(QWidget* parent);
  QStringList sweepArgs() const;
  bool localEndpoint() const;
  bool boxEndpoint() const;  // "Server on a box"
  // Run with the box endpoint: sweep the box's server, starting it first unless it is up.
  bool runOnBox();
  // `serve` options from the local-server fields; empty (and *error) if incomplete.
  QStringList serveArgs(QString* error) const;
  // The model id the sweep asks the local server for; empty (and *error) if ambiguous.
  QString servedModelId(QString* error) const;
  QStringList checkedAdapters() const;
  void followCheckedAdapter();
  void resetProgress(const QString& label);
  // Reads the server's /metrics first (so that its counters start before the first request),
  // then runs `bench`.
  void startSweep();
  void launchBench();
  void onServerReady(const QString& baseUrl);
  void onServerFailed(const QString& error);
  void fillLocalDefaults();  // the lab's models/demo-base and its runs' adapters
  void updateEndpointUi();
  void onLevelStarted(int concurrency, int planned);
  void onFinished(int exitCode, const QString& error, bool stopped);
  void updateComparison();
  // After the table was reloaded: the rows selected before (by benchmark), plus any benchmark
  // new since the last reload that is under way or has figures (this panel's sweep, or one
  // another process recorded); when a lab has just opened, its newest rows with figures, up to
  // kCompareOnOpen.
  void restoreSelection(const std::set<std::int64_t>& selectedBefore);
  void setStatus(const QString& text);
  void exportWithDialog(bool json);

  backends::LabSession* session_;
  backends::BenchProcess* process_;
  backends::LocalServeProcess* server_;
  QLineEdit *url_, *model_, *levels_, *label_, *serveModelDir_;
  QComboBox *endpoint_, *endpointKind_, *loraMode_, *dtype_;
  QSpinBox *maxBatch_, *streamInterval_;
  QListWidget* adapters_;
  QWidget* localBox_;
  BoxServerForm* boxForm_;
  QPushButton* stopServerButton_;
  bool sweepPending_ = false;   // Run asked for a sweep once the local server is up
  bool sweepOnLocal_ = false;   // the running sweep targets the local server
  bool sweepOnBox_ = false;     // … or the server on a box
  QStringList restartArgs_;     // a different server was running: start this one once it stopped
  QString defaultModelDir_;
  QString autoModel_;           // the Model field's text when the panel filled it from a ticked adapter
  QString typedUrl_;            // the URL field's text while the local server is shown
  bool shownLocal_ = false;     // the lab's models/demo-base the field was filled with
  QSpinBox *numPrompts_, *warmup_, *outputLen_;
  QDoubleSpinBox* price_;
  QPushButton *runButton_, *stopButton_;
  QProgressBar* progress_;
  QLabel *levelLabel_, *status_;
  QLabel* serverLabel_;  // the server's view of the sweep (its /metrics)
  backends::ServerMetricsPoller* metrics_;
  bool metricsPending_ = false;     // Run: the server's counters are being read before the sweep
  long long clientOutputTokens_ = 0;  // the sweep's output tokens as the client counted them
  int sweepWarmup_ = 0;               // the sweep's warm-up requests (counted by the server only)
  // bench's arguments as the form stood when Run was clicked: the sweep starts after the server's
  // counters are read, and what was typed meanwhile belongs to the next sweep
  QStringList sweepArgs_;
  BenchLiveChart* live_;
  BenchResultsModel* results_;
  QTableView* table_;
  QTabWidget* charts_;  // "Live sweep" and "Compare rows"
  QChartView* compare_;
  QBarSeries* bars_;
  int levelIndex_ = 0;
  bool warmingUp_ = false;  // bench runs the sweep's warm-up (started, no level yet)
  double timeOffset_ = 0, lastT_ = 0;
  std::set<std::int64_t> knownBenchmarks_;  // the benchmarks the table showed at its last reload
  bool labOpened_ = true;                   // the next reload is this lab's first: nothing to keep
  bool restoringSelection_ = false;         // the selection is being set by reload, not by the user
};

}  // namespace crosslab::widgets
