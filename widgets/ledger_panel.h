#pragma once
// The Ledger panel: per-life stacked bars with the ratio, the lives and totals table
// (other spend and credits included), transfers with their rates, the friction log with
// add / edit and the pre-filled offers (failed or stalled runs, lives that ended with
// debug time), and Export report… (written into the lab's reports/ off the GUI thread,
// then opened with the desktop's browser).

#include <QPointer>
#include <QWidget>

class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QThread;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class LifeBarsChart;

class LedgerPanel : public QWidget {
  Q_OBJECT
 public:
  explicit LedgerPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~LedgerPanel() override;  // waits for a report being written

  LifeBarsChart* chart() const { return chart_; }
  bool exporting() const { return exporting_; }

 public slots:
  void reload();
  void addFriction();
  void editFriction();
  void logSelectedOffer();
  void exportReport();

 signals:
  // The report's files are written (html empty and error set when it failed).
  void reportExported(const QString& html, const QString& error);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void onReportDone(const QString& html, const QString& error);

  backends::LabSession* session_;
  LifeBarsChart* chart_;
  QTabWidget* tabs_;
  QStandardItemModel* lives_;
  QStandardItemModel* transfers_;
  QStandardItemModel* spend_;
  QStandardItemModel* friction_;
  QTableView* livesView_;
  QTableView* frictionView_;
  QListWidget* offers_;
  QLabel* totals_;
  QLabel* forecast_;
  QLabel* status_;
  QPushButton* export_;
  QProgressBar* progress_;
  bool exporting_ = false;
  QPointer<QThread> worker_;
};

}  // namespace crosslab::widgets
