#pragma once
// A thin RAII layer over the SQLite C API: one connection, prepared statements,
// and transactions that roll back unless committed. Errors throw StoreError with
// SQLite's own message, prefixed by what we were doing.

#include <cstdint>
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

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
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

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
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
