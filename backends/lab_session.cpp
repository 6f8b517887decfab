#include "backends/lab_session.h"

#include <QDir>
#include <algorithm>
#include <spdlog/spdlog.h>

#include "core/store/lab_store.h"
#include "core/store/schema.h"

namespace crosslab::backends {

LabSession::LabSession(QObject* parent) : QObject(parent) {
  freshness_.setInterval(kFreshnessMs);
  connect(&freshness_, &QTimer::timeout, this, &LabSession::checkNow);
}

LabSession::~LabSession() = default;

bool LabSession::requestOpen(const QString& dir, QString* error) {
  try {
    adopt(std::make_unique<store::LabStore>(store::LabStore::open(dir.toStdString())));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    spdlog::error("cannot open lab {}: {}", dir.toStdString(), e.what());
    return false;
  }
}

bool LabSession::requestCreate(const QString& dir, const QString& name, QString* error) {
  try {
    adopt(std::make_unique<store::LabStore>(store::LabStore::create(dir.toStdString(), name.toStdString())));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    spdlog::error("cannot create lab {}: {}", dir.toStdString(), e.what());
    return false;
  }
}

qint64 LabSession::count(const QString& table) const {
  if (!store_) return 0;
  for (auto t : store::labTables())  // only known table names ever reach SQL
    if (table.toStdString() == t) return store_->db().scalarInt("SELECT count(*) FROM " + std::string(t));
  return 0;
}

void LabSession::checkNow() {
  if (!store_) return;
  if (filesLost_.isEmpty()) {
    const std::string lost = store_->db().walFilesLost();
    if (!lost.empty()) {
      filesLost_ = QString::fromStdString(lost);
      spdlog::error("lab {}: {}", path_.toStdString(), lost);
      emit labFilesLost(filesLost_);
    }
  }
  qint64 version = dataVersion_;
  try {
    version = store_->db().scalarInt("PRAGMA data_version");
  } catch (const std::exception& e) {
    spdlog::warn("lab {}: data_version: {}", path_.toStdString(), e.what());
    return;
  }
  if (version == dataVersion_) return;
  dataVersion_ = version;
  emit labDataChanged();
}

void LabSession::addCloseGuard(QObject* owner, CloseGuard guard) { addGuard({owner, std::move(guard), {}}); }

void LabSession::addCloseCheck(QObject* owner, CloseCheck check) { addGuard({owner, {}, std::move(check)}); }

void LabSession::addGuard(Guard guard) {
  QObject* owner = guard.owner;
  guards_.push_back(std::move(guard));
  connect(owner, &QObject::destroyed, this, [this, owner] {
    guards_.erase(std::remove_if(guards_.begin(), guards_.end(), [owner](const Guard& g) { return g.owner == owner; }),
                  guards_.end());
  });
}

QStringList LabSession::closeConcerns(CloseReason reason) const {
  QStringList out;
  if (!store_) return out;
  for (const auto& g : guards_)
    if (g.ask)
      if (QString concern = g.ask(reason); !concern.isEmpty()) out << concern;
  return out;
}

bool LabSession::runCloseChecks(CloseReason reason) {
  if (!store_ || reason == CloseReason::Signal) return true;
  const auto guards = guards_;  // a check may open dialogs, whose event loop may change the list
  for (const auto& g : guards)
    if (g.check && !g.check(reason)) return false;
  return true;
}

void LabSession::adopt(std::unique_ptr<store::LabStore> store) {
  const auto info = store->info();
  store_ = std::move(store);
  path_ = QDir(QString::fromStdString(store_->dir().string())).absolutePath();
  name_ = QString::fromStdString(info.name);
  schemaVersion_ = info.schemaVersion;
  filesLost_.clear();
  dataVersion_ = store_->db().scalarInt("PRAGMA data_version");
  freshness_.start();
  spdlog::info("opened lab '{}' at {} (schema {})", info.name, path_.toStdString(), schemaVersion_);
  emit labChanged();
}

}  // namespace crosslab::backends
