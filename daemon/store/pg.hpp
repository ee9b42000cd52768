#pragma once
// A thin RAII layer over libpq: a connection, statements with bound values (text format, numbered
// $1, $2, ... as PostgreSQL writes them), results by row and column, and transactions that roll back
// unless committed. Errors throw Error naming the server (its URL without the password) and the statement.
// A server that cannot be reached, or a connection lost under a statement, throws DatabaseUnavailable:
// the caller may wait and try again; the next statement reconnects.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/error.hpp"

struct pg_conn;
struct pg_result;

namespace schedlab::pg {

using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

class DatabaseUnavailable : public Error {
 public:
  using Error::Error;
};

// The URL with any password replaced by "***": what errors and logs may print.
std::string redacted(const std::string& url);
bool is_postgres_url(const std::string& url);  // postgresql:// or postgres://
// A glob ('*', '?') as an SQL LIKE pattern with escape character '\': the queue's --hosts and a store's
// --host are globs, matched by the database.
std::string like_pattern(const std::string& glob);

class Result {
 public:
  explicit Result(pg_result* result) : result_(result) {}
  ~Result();
  Result(Result&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;

  int rows() const;
  std::string text(int row, int column) const;  // "" for NULL
  std::int64_t integer(int row, int column) const;
  double real(int row, int column) const;
  bool is_null(int row, int column) const;
  std::int64_t affected() const;  // rows an INSERT, UPDATE or DELETE touched

 private:
  pg_result* result_;
};

class Connection {
 public:
  // Connects at once; throws DatabaseUnavailable when the server does not answer.
  explicit Connection(std::string url);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result exec(const std::string& sql, const std::vector<Value>& params = {});
  template <typename... Values>
  Result query(const std::string& sql, const Values&... values) {
    return exec(sql, std::vector<Value>{Value(values)...});
  }
  // Several statements in one string, no parameters (the schema).
  void script(const std::string& sql);
  const std::string& url() const { return url_; }  // redacted

 private:
  void ensure_connected();
  [[noreturn]] void fail(pg_result* result, const std::string& sql);

  std::string dsn_;
  std::string url_;
  pg_conn* conn_ = nullptr;
};

// BEGIN on construction; ROLLBACK in the destructor unless commit() ran. A lost connection rolls back
// on the server by itself.
class Transaction {
 public:
  explicit Transaction(Connection& db, const std::string& begin = "BEGIN");
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& db_;
  bool done_ = false;
};

}  // namespace schedlab::pg
