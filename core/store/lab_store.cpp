#include "core/store/lab_store.h"

#include <build_info.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include "core/store/schema.h"

namespace fs = std::filesystem;

namespace crosslab::store {
namespace {

constexpr const char* kSubfolders[] = {"models", "data", "runs", "reports"};


// SQLite opens any file lazily; the first read of the header tells whether it is a
// database at all. Turn SQLite's terse message into one that names the file.
int readUserVersion(Database& db, const fs::path& file) {
  try {
    return static_cast<int>(db.scalarInt("PRAGMA user_version"));
  } catch (const StoreError& e) {
    throw StoreError(file.string() + " is not a readable crosslab lab database (" + e.what() + ")");
  }
}

}  // namespace

std::string utcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

LabStore::LabStore(fs::path dir, Database db) : dir_(std::move(dir)), db_(std::move(db)) {}

bool LabStore::isLab(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kDatabaseName, ec);
}

LabStore LabStore::create(const fs::path& dir, const std::string& name) {
  if (isLab(dir)) throw StoreError("a lab already exists at " + dir.string());
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw StoreError(dir.string() + " exists and is not a folder");
  fs::create_directories(dir, ec);
  if (ec) throw StoreError("cannot create " + dir.string() + ": " + ec.message());
  for (const char* sub : kSubfolders) {
    fs::create_directories(dir / sub, ec);
    if (ec) throw StoreError("cannot create " + (dir / sub).string() + ": " + ec.message());
  }

  // Build the database under a temporary name and rename it into place, so a crash
  // never leaves a half-initialised lab.sqlite that later opens as a lab.
  const fs::path tmp = dir / "lab.sqlite.creating";
  fs::remove(tmp, ec);
  {
    Database db(tmp.string(), Database::Mode::ReadWriteCreate);
    db.exec("PRAGMA foreign_keys = ON");
    Transaction tx(db);
    for (const auto& m : migrations()) db.exec(std::string(m.sql));
    db.exec("PRAGMA user_version = " + std::to_string(currentSchemaVersion()));
    auto st = db.prepare("INSERT INTO labs(name, created_at, crosslab_version) VALUES (?, ?, ?)");
    st.bind(1, name).bind(2, utcNow()).bind(3, CROSSLAB_VERSION).run();
    tx.commit();
  }
  fs::rename(tmp, dir / kDatabaseName, ec);
  if (ec) throw StoreError("cannot finish " + (dir / kDatabaseName).string() + ": " + ec.message());
  spdlog::info("created lab '{}' at {}", name, dir.string());
  return open(dir);
}

LabStore LabStore::open(const fs::path& dir) {
  const fs::path file = dir / kDatabaseName;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw StoreError(dir.string() + " is not a folder");
  if (!fs::is_regular_file(file, ec))
    throw StoreError(dir.string() + " is not a crosslab lab (no " + kDatabaseName + ")");

  Database db(file.string(), Database::Mode::ReadWrite);
  // Check the version before anything writes (journal mode and migrations both do).
  const int version = readUserVersion(db, file);
  if (version > currentSchemaVersion())
    throw StoreError(file.string() + " was written by a newer crosslab (schema " +
                     std::to_string(version) + "; this build reads up to " +
                     std::to_string(currentSchemaVersion()) + "); upgrade crosslab to open it");
  if (version < 1) throw StoreError(file.string() + " is not a crosslab lab (no schema version)");

  LabStore store(dir, std::move(db));
  store.configureConnection();
  if (version < currentSchemaVersion()) store.migrate();
  return store;
}

void LabStore::configureConnection() {
  // WAL lets the GUI read while a crosslab-cli process writes; FULL sync makes every
  // acknowledged commit survive a machine crash, not only a process crash.
  db_.exec("PRAGMA busy_timeout = 10000");
  const std::string mode = db_.scalarText("PRAGMA journal_mode = WAL");
  if (mode != "wal") spdlog::warn("lab {}: journal mode is {}, not wal", dir_.string(), mode);
  db_.exec("PRAGMA synchronous = FULL");
  db_.exec("PRAGMA foreign_keys = ON");
  if (mode == "wal") db_.guardWalFiles();  // a commit into a deleted -wal is refused, loudly
}

void LabStore::migrate() {
  const int from = schemaVersion();
  // Keep a copy of the lab as it was, in case the user needs to go back to an older build.
  const fs::path backup = dir_ / ("lab.sqlite.schema" + std::to_string(from) + ".bak");
  std::error_code ec;
  if (!fs::exists(backup, ec)) {
    auto st = db_.prepare("VACUUM INTO ?");
    st.bind(1, backup.string()).run();
  }
  // Foreign-key enforcement cannot change inside a transaction; migrations that rebuild
  // tables must not trip over it midway, and it is checked after.
  db_.exec("PRAGMA foreign_keys = OFF");
  {
    Transaction tx(db_);
    for (const auto& m : migrations()) {
      if (m.version <= from) continue;
      db_.exec(std::string(m.sql));
      db_.exec("PRAGMA user_version = " + std::to_string(m.version));
      spdlog::info("lab {}: migrated to schema {} ({})", dir_.string(), m.version, m.summary);
    }
    if (db_.scalarInt("SELECT count(*) FROM pragma_foreign_key_check") != 0)
      throw StoreError("migration of " + dir_.string() + " found dangling references; left at schema " +
                       std::to_string(from));
    tx.commit();
  }
  db_.exec("PRAGMA foreign_keys = ON");
}

int LabStore::schemaVersion() { return static_cast<int>(db_.scalarInt("PRAGMA user_version")); }

LabInfo LabStore::info() {
  LabInfo info;
  info.path = dir_;
  info.schemaVersion = schemaVersion();
  auto st = db_.prepare("SELECT name, created_at FROM labs ORDER BY id LIMIT 1");
  if (st.step()) {
    info.name = st.text(0);
    info.createdAt = st.text(1);
  }
  for (auto table : labTables()) {
    const std::string t(table);
    info.counts.push_back({t, db_.scalarInt("SELECT count(*) FROM " + t)});
  }
  return info;
}

std::int64_t LabStore::addEvent(std::optional<std::int64_t> runId, std::optional<std::int64_t> boxId,
                                const std::string& type, const std::string& message,
                                const std::string& dataJson) {
  Transaction tx(db_);
  auto st = db_.prepare("INSERT INTO events(run_id, box_id, at, type, message, data_json) VALUES (?, ?, ?, ?, ?, ?)");
  st.bind(1, runId).bind(2, boxId).bind(3, utcNow()).bind(4, type).bind(5, message);
  if (dataJson.empty()) st.bindNull(6); else st.bind(6, dataJson);
  st.run();
  const auto id = db_.lastInsertId();
  tx.commit();
  return id;
}

std::string LabStore::setting(const std::string& key) {
  auto s = db_.prepare("SELECT value FROM settings WHERE key = ?1");
  s.bind(1, key);
  return s.step() ? s.text(0) : std::string();
}

void LabStore::setSetting(const std::string& key, const std::string& value) {
  db_.prepare("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2")
      .bind(1, key).bind(2, value).run();
}

}  // namespace crosslab::store
