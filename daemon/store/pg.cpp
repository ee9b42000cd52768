#include "daemon/store/pg.hpp"

#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace schedlab::pg {
namespace {

// SQLSTATE classes that mean the server went away or is not accepting work yet, not that the
// statement is wrong: 08 connection exception, 57P01-57P03 shutdown and start-up.
bool is_unavailable_state(const char* state) {
  if (state == nullptr) return false;
  return std::strncmp(state, "08", 2) == 0 || std::strcmp(state, "57P01") == 0 ||
         std::strcmp(state, "57P02") == 0 || std::strcmp(state, "57P03") == 0;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string to_text(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  return std::get<std::string>(v);
}

}  // namespace

std::string redacted(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto at = url.find('@', scheme + 3);
  if (at == std::string::npos) return url;
  const auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

bool is_postgres_url(const std::string& url) {
  return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
}

std::string like_pattern(const std::string& glob) {
  std::string out;
  for (char c : glob) {
    if (c == '*')
      out += '%';
    else if (c == '?')
      out += '_';
    else if (c == '%' || c == '_' || c == '\\')
      out += std::string("\\") + c;
    else
      out += c;
  }
  return out;
}

Result::~Result() {
  if (result_) PQclear(result_);
}
int Result::rows() const {
  return PQntuples(result_);
}
std::string Result::text(int row, int column) const {
  return PQgetisnull(result_, row, column) ? std::string() : std::string(PQgetvalue(result_, row, column));
}
std::int64_t Result::integer(int row, int column) const {
  return PQgetisnull(result_, row, column) ? 0 : std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}
double Result::real(int row, int column) const {
  return PQgetisnull(result_, row, column) ? 0 : std::strtod(PQgetvalue(result_, row, column), nullptr);
}
bool Result::is_null(int row, int column) const {
  return PQgetisnull(result_, row, column) != 0;
}
std::int64_t Result::affected() const {
  const char* n = PQcmdTuples(result_);
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

Connection::Connection(std::string url) : dsn_(std::move(url)), url_(redacted(dsn_)) {
  conn_ = PQconnectdb(dsn_.c_str());
  if (conn_ == nullptr) throw Error(url_ + ": cannot connect: out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    // The destructor does not run for a constructor that throws: the failed connection is freed here.
    const std::string why = trimmed(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    // A malformed URL is the user's to fix, not the server's to come back.
    if (why.find("invalid") != std::string::npos || why.find("missing") != std::string::npos)
      throw InputError(url_ + ": " + why);
    throw DatabaseUnavailable(url_ + ": cannot connect: " + why);
  }
  // Notices (CREATE ... IF NOT EXISTS of what exists) are not the user's business.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}

Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}

void Connection::ensure_connected() {
  if (PQstatus(conn_) == CONNECTION_OK) return;
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK)
    throw DatabaseUnavailable(url_ + ": connection lost: " + trimmed(PQerrorMessage(conn_)));
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}

void Connection::fail(pg_result* result, const std::string& sql) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string why =
      trimmed(result && *PQresultErrorMessage(result) ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
  const bool unavailable = is_unavailable_state(state) || PQstatus(conn_) != CONNECTION_OK;
  if (result) PQclear(result);
  std::string statement = sql.substr(0, 120);
  for (auto& c : statement)
    if (c == '\n') c = ' ';
  const std::string message = url_ + ": " + why + " (in: " + statement + ")";
  if (unavailable) throw DatabaseUnavailable(message);
  throw Error(message);
}

Result Connection::exec(const std::string& sql, const std::vector<Value>& params) {
  ensure_connected();
  std::vector<std::string> texts;
  texts.reserve(params.size());
  std::vector<const char*> values;
  for (const auto& p : params) {
    if (std::holds_alternative<std::nullptr_t>(p)) {
      texts.emplace_back();
      values.push_back(nullptr);
    } else {
      texts.push_back(to_text(p));
      values.push_back(texts.back().c_str());
    }
  }
  pg_result* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                              nullptr, nullptr, 0);
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r, sql);
  return Result(r);
}

void Connection::script(const std::string& sql) {
  ensure_connected();
  pg_result* r = PQexec(conn_, sql.c_str());
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(r, sql);
  PQclear(r);
}

Transaction::Transaction(Connection& db, const std::string& begin) : db_(db) {
  db_.exec(begin);
}

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (...) {  // a lost connection: the server rolled back already
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace schedlab::pg
