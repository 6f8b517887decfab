#pragma once
// The Venues panel: provider offers (sortable by $/GPU-hour) and provisioning with a
// price + minimum-billing confirmation; boxes with state, uptime, live running cost and
// an idle warning; a terminal-like log per box; the availability ladder and its
// timeline; teardown with a confirmation. Network and SSH work runs on a worker thread
// (one job at a time) with a busy bar and Cancel; the lab is written on the GUI thread.

#include <QMap>
#include <QWidget>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;
class QTableWidget;
class QListWidget;
class QThread;
class QTabWidget;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class OffersModel;
class BoxesModel;

class VenuesPanel : public QWidget {
  Q_OBJECT
 public:
  // Asked before anything that costs money or deletes; true = go ahead.
  using Confirmer = std::function<bool(const QString& title, const QString& text)>;
  // Asked for an encrypted key's passphrase (default: a password QInputDialog); nullopt =
  // cancelled. The answer is handed to libssh and wiped, never stored or logged.
  using PassphrasePrompt = std::function<std::optional<QString>(const QString& keyFile)>;

  explicit VenuesPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~VenuesPanel() override;

  void setConfirmer(Confirmer confirmer) { confirm_ = std::move(confirmer); }
  void setPassphrasePrompt(PassphrasePrompt prompt) { askPassphrase_ = std::move(prompt); }
  void setProviderSettings(const QString& apiUrl, const QString& team, const QString& apiKeyEnv);
  void setKnownHostsFile(const QString& file) { knownHosts_ = file; }
  void setPollMs(int ms) { pollMs_ = ms; }
  bool busy() const { return job_ != nullptr; }
  QString statusText() const;
  QString boxLog(const QString& box) const { return logs_.value(box); }
  OffersModel* offersModel() const { return offers_; }
  QSortFilterProxyModel* offersView() const { return offersProxy_; }
  BoxesModel* boxesModel() const { return boxes_; }
  QTableWidget* ladderTable() const { return ladder_; }
  QString timelineSummary() const;

 public slots:
  void refresh();
  void fetchOffers();
  void provisionOffer(int viewRow);
  void teardownBox(int row);
  void runOnBox(int row, const QString& command, bool acceptNewHostKey = false);
  void cancelJob();
  void tickMeter();

 signals:
  void jobFinished(bool ok, const QString& message);

 private:
  struct Job;
  using Work = std::function<void(Job&)>;
  using Done = std::function<void(const QString& error)>;
  void startJob(const QString& label, Work work, Done done);
  // runOnBox with the passphrase already asked (kept for an accept-host-key retry only).
  void runOnBoxWith(int row, const QString& command, bool acceptNewHostKey, std::shared_ptr<std::string> passphrase);
  void post(std::function<void()> fn);
  void appendLog(const QString& box, const QString& text);
  void buildOffersTab(QTabWidget* tabs);
  void buildBoxesTab(QTabWidget* tabs);
  void buildLadderTab(QTabWidget* tabs);
  void showTimeline(int ladderRow);
  int selectedBoxRow() const;
  void setStatus(const QString& text);

  backends::LabSession* session_;
  Confirmer confirm_;
  PassphrasePrompt askPassphrase_;
  OffersModel* offers_;
  QSortFilterProxyModel* offersProxy_;
  BoxesModel* boxes_;
  QLineEdit* apiUrl_;
  QLineEdit* team_;
  QLineEdit* apiKeyEnv_;
  QTableView* offersTable_;
  QTableView* boxesTable_;
  QPlainTextEdit* log_;
  QLineEdit* command_;
  QLabel* total_;
  QSpinBox* idleMinutes_;
  QTableWidget* ladder_;
  QListWidget* timeline_;
  QLabel* timelineSummary_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QMap<QString, QString> logs_;
  QString knownHosts_;
  int pollMs_ = 5000;
  Job* job_ = nullptr;
};

}  // namespace crosslab::widgets
