#pragma once
// A lab is a folder: lab.sqlite (SQLite, WAL, foreign keys on) plus models/, data/,
// runs/ and reports/. LabStore opens one, runs pending migrations, and refuses a lab
// written by a newer schema before touching it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/store/run_store.h"
#include "core/store/sqlite_db.h"
#include "core/util/lab_files.h"

namespace crosslab::store {

struct TableCount {
  std::string table;
  std::int64_t rows;
};

struct LabInfo {
  std::filesystem::path path;
  std::string name;
  std::string createdAt;
  int schemaVersion = 0;
  std::vector<TableCount> counts;
};

class LabStore {
 public:
  static constexpr const char* kDatabaseName = util::kLabDatabaseName;  // opened by SQLite only

  // Creates the folder layout and a fresh lab.sqlite. Fails if a lab is already there.
  static LabStore create(const std::filesystem::path& dir, const std::string& name);
  // Opens an existing lab, migrating an older schema (after a backup copy) and refusing
  // a newer one. Throws StoreError with a one-line reason.
  static LabStore open(const std::filesystem::path& dir);
  static bool isLab(const std::filesystem::path& dir);

  LabStore(LabStore&&) noexcept = default;
  LabStore& operator=(LabStore&&) noexcept = default;

  const std::filesystem::path& dir() const { return dir_; }
  int schemaVersion();
  LabInfo info();
  Database& db() { return db_; }

  // Runs and metrics: RunStore (run_store.h), the one owner of a run's status.
  RunStore runs() { return RunStore(*this); }

  // Lab-scoped key/value settings (the settings table): choices that belong to the lab,
  // not to the user (a panel's provider URL and team, …). "" when unset.
  std::string setting(const std::string& key);
  void setSetting(const std::string& key, const std::string& value);

  std::int64_t addEvent(std::optional<std::int64_t> runId, std::optional<std::int64_t> boxId,
                        const std::string& type, const std::string& message,
                        const std::string& dataJson = {});

 private:
  LabStore(std::filesystem::path dir, Database db);
  void configureConnection();
  void migrate();

  std::filesystem::path dir_;
  Database db_;
};

// "2026-11-29T16:40:00Z"
std::string utcNow();

}  // namespace crosslab::store
