#include "backends/lab_session.h"

#include <QDir>
#include <spdlog/spdlog.h>

#include "core/store/lab_store.h"
#include "core/store/schema.h"

namespace crosslab::backends {

LabSession::LabSession(QObject* parent) : QObject(parent) {}
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

void LabSession::adopt(std::unique_ptr<store::LabStore> store) {
  const auto info = store->info();
  store_ = std::move(store);
  path_ = QDir(QString::fromStdString(store_->dir().string())).absolutePath();
  name_ = QString::fromStdString(info.name);
  schemaVersion_ = info.schemaVersion;
  spdlog::info("opened lab '{}' at {} (schema {})", info.name, path_.toStdString(), schemaVersion_);
  emit labChanged();
}

}  // namespace crosslab::backends
