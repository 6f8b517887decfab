#pragma once
// The lab the GUI has open: a Qt-facing owner of core's LabStore. Opening either fully
// succeeds (the new lab replaces the old one) or changes nothing and reports why.
//
// Freshness: while a lab is open the session looks every `freshnessInterval()` ms whether
// another connection committed to it — another process (crosslab-cli train/bench/box/eval, a
// remote run's follower) or a worker thread's own connection — with `PRAGMA data_version`
// (one tiny query, no file reads), and then emits labDataChanged() once. Panels connect to
// it and reload what they show (keeping selection and place). Writes made through this
// session's own store do not trigger it: the panel that made them already knows.
//
// Lab files: the same tick asks the store's guard whether the lab's -wal/-shm are still the
// files this connection uses and its locks on them still held; if not, writing has stopped
// (store::LabFilesLost) and labFilesLost(reason) is emitted once, for the window to say so.
//
// Close guards: before the window quits, closes or switches labs it asks
// closeConcerns(); panels register guards that name what closing now would lose or keep
// costing (a running trainer …) and the window puts them all in one question. A panel that
// must hold its own dialog (Venues: tear billing boxes down, leave them running, or cancel)
// registers a close check instead, run after that question. labClosing() says it goes ahead.

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <functional>
#include <memory>

namespace crosslab::store {
class LabStore;
struct LabInfo;
}  // namespace crosslab::store

namespace crosslab::backends {

class LabSession : public QObject {
  Q_OBJECT
 public:
  static constexpr int kFreshnessMs = 1000;
  enum class CloseReason { Quit, SwitchLab, Signal };
  Q_ENUM(CloseReason)
  // Empty: closing is fine as far as this guard knows; otherwise one sentence for the user
  // ("lora-3 is still training; it will be stopped").
  using CloseGuard = std::function<QString(CloseReason)>;
  // True: closing may go ahead (the check may have asked the user and acted); false cancels.
  using CloseCheck = std::function<bool(CloseReason)>;

  explicit LabSession(QObject* parent = nullptr);
  ~LabSession() override;

  // On failure returns false, sets *error to a one-line reason, keeps the current lab.
  bool requestOpen(const QString& dir, QString* error);
  bool requestCreate(const QString& dir, const QString& name, QString* error);

  bool isOpen() const { return store_ != nullptr; }
  QString path() const { return path_; }
  QString name() const { return name_; }
  int schemaVersion() const { return schemaVersion_; }
  // Row count of a lab table; 0 when no lab is open.
  qint64 count(const QString& table) const;
  store::LabStore* store() { return store_.get(); }

  // Freshness (see above). checkNow() looks at once; tests may shorten the interval.
  int freshnessInterval() const { return freshness_.interval(); }
  void setFreshnessInterval(int ms) { freshness_.setInterval(ms); }
  void checkNow();
  // Non-empty once the lab's -wal/-shm were found deleted or replaced: the reason.
  QString filesLost() const { return filesLost_; }

  // Close guards (see above): registered for as long as `owner` lives.
  void addCloseGuard(QObject* owner, CloseGuard guard);
  QStringList closeConcerns(CloseReason reason) const;
  void addCloseCheck(QObject* owner, CloseCheck check);
  // Runs the checks in registration order until one says no; not for CloseReason::Signal.
  bool runCloseChecks(CloseReason reason);
  // The window decided to close the lab (quit, switch, signal): guards' owners clean up.
  void announceClosing(CloseReason reason) { emit labClosing(reason); }

 signals:
  // A different lab (or none) is open now.
  void labChanged();
  // Someone else committed to the open lab since the last look (coalesced, at most once per tick).
  void labDataChanged();
  void labFilesLost(const QString& reason);
  void labClosing(crosslab::backends::LabSession::CloseReason reason);

 private:
  void adopt(std::unique_ptr<store::LabStore> store);

  struct Guard {
    QObject* owner;
    CloseGuard ask;
    CloseCheck check;
  };
  void addGuard(Guard guard);

  std::unique_ptr<store::LabStore> store_;
  QString path_;
  QString name_;
  int schemaVersion_ = 0;
  QTimer freshness_;
  qint64 dataVersion_ = -1;
  QString filesLost_;
  QVector<Guard> guards_;
};

}  // namespace crosslab::backends
