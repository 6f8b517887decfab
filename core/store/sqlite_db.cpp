#include "core/store/sqlite_db.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include "core/store/posix_locks.h"

#include <utility>
#include <vector>

namespace crosslab::store {

// The -wal and -shm files of a WAL connection, as they were when guarding began.
struct WalGuard {
  struct File {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::vector<File> files;
  std::string db;            // the database file, whose locks are checked with the -shm's
  bool checkLocks = false;   // /proc/locks showed this connection's locks when guarding began
  std::string lost;          // set once, for good

  // SQLite's WAL connection holds, for its whole life, a read lock on the database file and
  // one on byte 128 of the -shm. Transactions take their other locks anew; these two are
  // gone for good once something else in the process closed a descriptor of those files.
  static constexpr std::int64_t kDmsByte = 128;
  bool locksHeld() const {
    const auto onDb = heldLocks(db), onShm = heldLocks(db + "-shm");
    if (!onDb || !onShm) return true;  // cannot tell: say nothing
    bool dms = false;
    for (const auto& l : *onShm) dms = dms || l.covers(kDmsByte);
    return !onDb->empty() && dms;
  }

  const std::string& check() {
    if (!lost.empty()) return lost;
    if (checkLocks && !locksHeld()) {
      lost = "this process's locks on " + db + " were dropped (something in it opened and closed the "
             "lab's database files); writing stopped to protect the lab: close it and open it again";
      return lost;
    }
    for (const auto& f : files) {
      struct stat st {};
      const bool present = ::stat(f.path.c_str(), &st) == 0;
      if (present && st.st_dev == f.dev && st.st_ino == f.ino) continue;
      lost = f.path + (present ? " was replaced" : " was deleted") +
             " on disk while this process had the lab open (another program believed it was the lab's "
             "only user); writing stopped to protect the lab: close it and open it again";
      break;
    }
    return lost;
  }

  // SQLite's commit hook: non-zero turns the COMMIT into a ROLLBACK.
  static int onCommit(void* self) { return static_cast<WalGuard*>(self)->check().empty() ? 0 : 1; }
};

namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& what, WalGuard* guard = nullptr) {
  if (guard && !guard->lost.empty()) throw LabFilesLost(guard->lost);
  std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
  throw StoreError(msg);
}

}  // namespace

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), guard_(other.guard_) {}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) fail(db_, "bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) fail(db_, "bind");
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                        SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, "bind");
  return *this;
}

Statement& Statement::bindNull(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) fail(db_, "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, "query failed", guard_);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::isNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}
std::optional<double> Statement::optReal(int column) const {
  if (isNull(column)) return std::nullopt;
  return real(column);
}
std::optional<std::int64_t> Statement::optInt64(int column) const {
  if (isNull(column)) return std::nullopt;
  return int64(column);
}

Database::Database(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Mode::ReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::ReadWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
  }
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = "cannot open " + path + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)), guard_(std::move(other.guard_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_ && guard_ && !guard_->check().empty()) sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    guard_ = std::move(other.guard_);
  }
  return *this;
}

void Database::guardWalFiles() {
  // Never unlink the WAL and -shm on close, even when this connection believes it is the
  // last one: a process whose locks were dropped may still be using them.
  int persist = 1;
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  scalarInt("SELECT count(*) FROM sqlite_master");  // a read opens the -wal and -shm
  auto guard = std::make_unique<WalGuard>();
  for (const char* suffix : {"-wal", "-shm"}) {
    WalGuard::File f{path_ + suffix};
    struct stat st {};
    if (::stat(f.path.c_str(), &st) != 0) throw StoreError(f.path + " is missing after opening " + path_ + " in WAL mode");
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    guard->files.push_back(std::move(f));
  }
  guard->db = path_;
  guard->checkLocks = guard->locksHeld() && heldLocks(path_) && !heldLocks(path_)->empty();
  guard_ = std::move(guard);
  sqlite3_commit_hook(db_, &WalGuard::onCommit, guard_.get());
}

std::string Database::walFilesLost() { return guard_ ? guard_->check() : std::string(); }

void Database::fail(const std::string& what) { store::fail(db_, what, guard_.get()); }

Database::~Database() {
  // A connection whose -wal is gone must not checkpoint it into lab.sqlite on close: another
  // process may have written newer pages there since.
  if (db_ && guard_ && !guard_->check().empty()) sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_close(db_);
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if (guard_ && !guard_->lost.empty()) throw LabFilesLost(guard_->lost);
    throw StoreError(msg);
  }
}

Statement Database::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK)
    fail("prepare");
  return Statement(db_, stmt, guard_.get());
}

std::int64_t Database::lastInsertId() const { return sqlite3_last_insert_rowid(db_); }

std::int64_t Database::scalarInt(const std::string& sql) {
  auto st = prepare(sql);
  return st.step() ? st.int64(0) : 0;
}

std::string Database::scalarText(const std::string& sql) {
  auto st = prepare(sql);
  return st.step() ? st.text(0) : std::string();
}

Transaction::Transaction(Database& db) : db_(db) {
  if (const std::string lost = db_.walFilesLost(); !lost.empty()) throw LabFilesLost(lost);
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
      // The connection is already out of the transaction (e.g. SQLite rolled back itself).
    }
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace crosslab::store
