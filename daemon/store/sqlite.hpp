#pragma once
// A thin RAII layer over SQLite's C API: a connection, prepared statements with bound values, and
// transactions that roll back unless committed. Errors throw Error naming the database and statement.
// A database another process holds locked (SQLITE_BUSY: `store rebuild` while the daemon ends a step)
// is waited for: SQLite's busy timeout, then retries with backoff for kBusyGiveUpSeconds in all.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace schedlab::sql {

using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

inline constexpr double kBusyGiveUpSeconds = 600;

class Database;

class Statement {
 public:
  Statement(Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const Value& value);  // 1-based, as SQLite counts
  template <typename... Values>
  Statement& bind_all(const Values&... values) {
    int i = 0;
    (bind(++i, Value(values)), ...);
    return *this;
  }
  bool step();  // true while a row is available
  void run();   // steps to the end (statements without rows)
  void reset();

  std::int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  bool is_null(int column) const;

 private:
  Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  bool stepped_ = false;  // a row was returned since the last reset: a busy retry would repeat it
};

class Database {
 public:
  explicit Database(const std::filesystem::path& file);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);
  std::int64_t last_insert_id() const;
  sqlite3* handle() { return db_; }
  const std::filesystem::path& file() const { return file_; }
  [[noreturn]] void fail(const std::string& doing) const;
  // Throws InputError (a person must look: exit 2, no restart) when the file was deleted or replaced
  // since this connection first wrote it: SQLite would go on writing to the unlinked inode, and
  // everything recorded from then on would be lost.
  void check_still_the_file();

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
  std::optional<std::pair<dev_t, ino_t>> identity_;  // of the file, from the first transaction on
};

// BEGIN IMMEDIATE on construction; ROLLBACK in the destructor unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace schedlab::sql
