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

// One logged training step (metrics row).
struct MetricRow {
  std::int64_t step = 0;
  std::optional<double> loss, lr, epoch, evalLoss, wallSeconds, tokensPerSecond;
  std::optional<std::int64_t> tokens;
};

struct NewRun {
  std::string name;
  std::string kind = "train";
  std::string engine = "crosslab";
  std::string model;
  std::optional<std::int64_t> totalSteps;
  std::string runDir;
  std::string recipeJson;
};

// A run as the Training panel lists it.
struct RunSummary {
  std::int64_t id = 0;
  std::string name, kind, engine, model, venue, status, statusReason, runDir, startedAt, endedAt;
  std::optional<std::int64_t> totalSteps, lastStep;
  std::optional<double> lastLoss, tokensPerSecond;
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

  // Domain writes used by the CLI and the trainer; each is one transaction.
  std::int64_t addRun(const NewRun& run);
  void setRunStatus(std::int64_t runId, const std::string& status, const std::string& reason = {});
  // Fills in what a trainer knows once it has read its data (a row registered before the
  // trainer started, e.g. by the Training panel, or a resumed run).
  void setRunPlan(std::int64_t runId, std::optional<std::int64_t> totalSteps, const std::string& recipeJson);
  // Upserts: writing a step that exists replaces it, so a resumed run never doubles a step.
  void appendMetrics(std::int64_t runId, const std::vector<MetricRow>& rows);
  std::vector<RunSummary> runSummaries(const std::string& kind = "train");
  // Metrics rows of a run with step > afterStep, in step order (live charts poll this).
  std::vector<MetricRow> metricsAfter(std::int64_t runId, std::int64_t afterStep);

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
