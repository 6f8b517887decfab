#pragma once
// A thin RAII layer over the SQLite C API: one connection, prepared statements,
// and transactions that roll back unless committed. Errors throw StoreError with
// SQLite's own message, prefixed by what we were doing.
//
// A lab's connection (guardWalFiles, once it is known to be a lab in WAL mode) keeps its
// WAL on close (SQLITE_FCNTL_PERSIST_WAL): the -wal and -shm files are never unlinked, so no
// process can delete them under another one that lost its locks (core/util/lab_files.h).
// It also refuses to commit once its -wal or -shm is gone from disk or replaced
// (LabFilesLost), and then does not checkpoint on close.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace crosslab::store {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The -wal or -shm file this connection writes through was deleted or replaced on disk by
// another process. Writing on would go into a file nobody else sees; every write is refused
// from then on, until the lab is closed and opened again.
class LabFilesLost : public StoreError {
 public:
  using StoreError::StoreError;
};

struct WalGuard;

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, WalGuard* guard = nullptr) : db_(db), stmt_(stmt), guard_(guard) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, const char* value) { return bind(index, std::string(value)); }
  Statement& bindNull(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bindNull(index);
  }

  // Advances; true while a row is available.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  // Columns are 0-based, as in SQLite.
  bool isNull(int column) const;
  std::int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<double> optReal(int column) const;
  std::optional<std::int64_t> optInt64(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  WalGuard* guard_;
};

class Database {
 public:
  enum class Mode { ReadWrite, ReadWriteCreate, ReadOnly };

  Database(const std::string& path, Mode mode);
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  ~Database();

  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  std::int64_t lastInsertId() const;
  // Value of the first column of the first row (SELECT count(*) …, PRAGMA …).
  std::int64_t scalarInt(const std::string& sql);
  std::string scalarText(const std::string& sql);
  const std::string& path() const { return path_; }

  // WAL mode: keeps the -wal and -shm on close, remembers which files (device, inode) this
  // connection uses, and from then on refuses every commit while either is gone or replaced.
  void guardWalFiles();
  // Empty while the guarded files are in place (or nothing is guarded); otherwise the loud
  // one-line reason, for good: a loss once noticed stays noticed. Costs two stat() calls.
  std::string walFilesLost();

 private:
  [[noreturn]] void fail(const std::string& what);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::unique_ptr<WalGuard> guard_;  // stable address: SQLite's commit hook points at it
};

// BEGIN IMMEDIATE … COMMIT; rolls back in the destructor unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Database& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace crosslab::store
