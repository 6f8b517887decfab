#pragma once
// The Venues panel: provider offers (sortable by $/GPU-hour) and renting behind a price +
// minimum-billing confirmation; boxes (rented VMs and machines added by hand) with state,
// uptime, live running cost, an idle warning, ended lives on request; commands, file
// transfers and teardown on the selected box; the availability ladder, its probes and
// its timeline. Network and SSH work runs on a worker thread (one job at a time) with a
// progress bar and a Cancel that answers within a second; the lab is written on the GUI
// thread. Every box record carries what ends it (provider, API URL, team, key variable);
// the form's settings belong to the lab (its settings table), not to the user.

#include <QMap>
#include <QPointer>
#include <QWidget>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/venues/venue_store.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;
class QTableWidget;
class QTabWidget;

namespace crosslab::backends {
class LabSession;
}
namespace crosslab::providers {
struct HotAisleOptions;
}
namespace crosslab::ssh {
class SshSession;
}

namespace crosslab::widgets {

class OffersModel;
class BoxesModel;
class BackgroundJob;
class LadderView;

class VenuesPanel : public QWidget {
  Q_OBJECT
 public:
  // Asked before anything that costs money, deletes or trusts; true = go ahead. The
  // default is a question box whose default button is No.
  using Confirmer = std::function<bool(const QString& title, const QString& text)>;
  // Asked for an encrypted key's passphrase (default: a password QInputDialog); nullopt =
  // cancelled. The answer is handed to libssh and wiped, never stored or logged.
  using PassphrasePrompt = std::function<std::optional<QString>(const QString& keyFile)>;
  // Picks a local file: to send (save = false) or where to write one (save = true);
  // empty = cancelled.
  using FileChooser = std::function<QString(const QString& title, const QString& suggested, bool save)>;
  // What to do about billing boxes before the window or the lab closes.
  enum class CloseChoice { Cancel, LeaveRunning, TearDown };
  using CloseAsker = std::function<CloseChoice(const QString& text)>;

  explicit VenuesPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~VenuesPanel() override;

  void setConfirmer(Confirmer confirmer) { confirm_ = std::move(confirmer); }
  void setPassphrasePrompt(PassphrasePrompt prompt) { askPassphrase_ = std::move(prompt); }
  void setFileChooser(FileChooser chooser) { chooseFile_ = std::move(chooser); }
  void setCloseAsker(CloseAsker asker) { askClose_ = std::move(asker); }
  // Fills the form (and saves it in the lab when one is open).
  void setProviderSettings(const QString& apiUrl, const QString& team, const QString& apiKeyEnv);
  void setKnownHostsFile(const QString& file) { knownHosts_ = file; }
  void setPollMs(int ms) { pollMs_ = ms; }
  bool busy() const;
  QString statusText() const;
  QString boxLog(const QString& box) const { return logs_.value(box); }
  OffersModel* offersModel() const { return offers_; }
  QSortFilterProxyModel* offersView() const { return offersProxy_; }
  BoxesModel* boxesModel() const { return boxes_; }
  QTableWidget* ladderTable() const;
  QString timelineSummary() const;

  // Active boxes that bill (a price per hour), with their cost so far.
  std::vector<venues::BoxRow> billingBoxes() const;
  // Before quitting, closing or switching the lab (`action`: "Quit", "Close the lab" …):
  // true when it may go ahead. With billing boxes it asks (naming them and their cost);
  // Tear down ends the rented ones first and goes ahead only when all of them ended.
  bool confirmClose(const QString& action);

 public slots:
  void refresh();
  void fetchOffers();
  void provisionOffer(int viewRow);
  void teardownBox(int row);
  void runOnBox(int row, const QString& command, bool acceptNewHostKey = false);
  void pushToBox(int row);
  void pullFromBox(int row);
  void addBox();
  void cancelJob();
  void tickMeter();

 signals:
  void jobFinished(bool ok, const QString& message);

 private:
  using Work = std::function<void(const std::atomic<bool>& cancel)>;
  using Done = std::function<void(const QString& error)>;
  void startJob(const QString& label, Work work, Done done);
  // Runs the event loop until the job in flight (if any) has finished.
  void waitForJob();
  // Ends a box life without asking (the user confirmed already).
  void teardownConfirmed(const venues::BoxRow& box);
  // An SSH action on `box` on the worker thread: passphrase asked first when the key is
  // encrypted, an unknown host key asked about (and the action retried when trusted).
  using SshAction = std::function<void(ssh::SshSession& session, const std::atomic<bool>& cancel)>;
  // `started` runs once the action is sure to start (after the passphrase was given).
  void sshJob(const venues::BoxRow& box, const QString& label, SshAction action, Done done, bool acceptNew,
              std::shared_ptr<std::string> passphrase, const std::function<void()>& started = {});
  // A transfer's progress callback (worker thread) that posts at most each 0.1 %.
  std::function<void(std::uint64_t, std::uint64_t)> transferProgress();
  void post(std::function<void()> fn);
  void appendLog(const QString& box, const QString& text);
  void buildOffersTab(QTabWidget* tabs);
  void buildBoxesTab(QTabWidget* tabs);
  void loadSettings();
  void saveSetting(const char* key, const QString& value);
  void reloadBoxes();
  void updateTotal();
  void setBusyUi(bool busy);
  // A prompt about what to select or type first; cleared when the tab changes.
  void hint(const QString& text);
  // The selected box row, or -1 after saying what to select.
  int requireBox(const QString& action);
  providers::HotAisleOptions formOptions() const;
  void setStatus(const QString& text);
  void setTransferProgress(std::uint64_t done, std::uint64_t total);

  backends::LabSession* session_;
  Confirmer confirm_;
  PassphrasePrompt askPassphrase_;
  FileChooser chooseFile_;
  CloseAsker askClose_;
  OffersModel* offers_;
  QSortFilterProxyModel* offersProxy_;
  BoxesModel* boxes_;
  QTabWidget* tabs_ = nullptr;
  QLineEdit* apiUrl_ = nullptr;
  QLineEdit* team_ = nullptr;
  QLineEdit* apiKeyEnv_ = nullptr;
  QSpinBox* providerTimeout_ = nullptr;
  QPushButton* fetch_ = nullptr;
  QPushButton* provision_ = nullptr;
  QTableView* offersTable_ = nullptr;
  QTableView* boxesTable_ = nullptr;
  QCheckBox* showEnded_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QLineEdit* command_ = nullptr;
  QLineEdit* remotePath_ = nullptr;
  QList<QPushButton*> boxActions_;
  QLabel* total_ = nullptr;
  QSpinBox* idleMinutes_ = nullptr;
  LadderView* ladder_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QLabel* status_ = nullptr;
  bool statusIsHint_ = false;
  bool loadingSettings_ = false;
  QMap<QString, QString> logs_;
  QString knownHosts_;
  int pollMs_ = 5000;
  QPointer<BackgroundJob> job_;
};

}  // namespace crosslab::widgets
