#include "daemon/store/sqlite.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/clock.hpp"
#include "core/disk_full.hpp"
#include "core/error.hpp"

namespace schedlab::sql {
namespace {

// Waits between retries of a statement SQLite found busy: 10 ms doubling to 1 s, until
// kBusyGiveUpSeconds passed since the first try. False when it is time to give up.
class BusyBackoff {
 public:
  bool wait() {
    if (monotonic_seconds() - started_ > kBusyGiveUpSeconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    delay_ms_ = std::min(delay_ms_ * 2, 1000);
    return true;
  }

 private:
  double started_ = monotonic_seconds();
  int delay_ms_ = 10;
};

bool is_busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY;
}

// A file that is not a database, or a damaged one, needs a person, not a restart: InputError (exit 2,
// which the unit does not restart on) saying what to do. The index only is lost; the bundles are the record.
// A full disk (SQLITE_FULL, or an I/O error whose errno is ENOSPC or EDQUOT) is DiskFullError naming the
// file: the daemon waits for space or stops, as its campaign says; SQLite rolled the statement back.
[[noreturn]] void throw_store_error(sqlite3* db, const std::filesystem::path& file,
                                    const std::string& message) {
  const int rc = sqlite3_errcode(db) & 0xff;
  if (rc == SQLITE_FULL || (rc == SQLITE_IOERR && is_disk_full(sqlite3_system_errno(db))))
    throw DiskFullError(message, is_disk_full(sqlite3_system_errno(db)) ? sqlite3_system_errno(db) : ENOSPC,
                        file);
  if (rc != SQLITE_NOTADB && rc != SQLITE_CORRUPT) throw Error(message);
  throw InputError(message +
                   " (the store is only an index: the bundles are intact; move this file aside and `schedlab "
                   "store rebuild DIR` indexes them into a new one)");
}

}  // namespace

Database::Database(const std::filesystem::path& file) : file_(file) {
  if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(file.string() + ": cannot open the store: " + why);
  }
  // A second process (schedlab history while the daemon writes) waits instead of failing at once.
  sqlite3_busy_timeout(db_, 10000);
}

Database::~Database() {
  sqlite3_close(db_);
}

void Database::fail(const std::string& doing) const {
  throw_store_error(db_, file_, file_.string() + ": " + doing + ": " + sqlite3_errmsg(db_));
}

void Database::check_still_the_file() {
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) {
    if (!identity_) return;  // not written yet: SQLite creates it
    throw InputError(
        file_.string() + ": the store was deleted while in use (" + errno_text(errno) +
        "); nothing more is recorded. The bundles are intact: `schedlab store rebuild DIR` indexes "
        "them into a new store");
  }
  const std::pair<dev_t, ino_t> now{st.st_dev, st.st_ino};
  if (identity_ && *identity_ != now)
    throw InputError(file_.string() +
                     ": the store was replaced by another file while in use; nothing more is "
                     "recorded. The bundles are intact: `schedlab store rebuild DIR` indexes them");
  identity_ = now;
}

void Database::exec(const std::string& sql) {
  char* message = nullptr;
  BusyBackoff backoff;
  int rc;
  // Retried whole: a busy error comes before the first statement changed anything (BEGIN IMMEDIATE,
  // the schema's CREATE IF NOT EXISTS) or from a COMMIT, which can be retried as it stands.
  while (is_busy(rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message)) && backoff.wait()) {
    sqlite3_free(message);
    message = nullptr;
  }
  if (rc != SQLITE_OK) {
    std::string why = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    throw_store_error(db_, file_, file_.string() + ": " + sql.substr(0, 60) + ": " + why);
  }
}

std::int64_t Database::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}

Statement::Statement(Database& db, const std::string& sql) : db_(db), sql_(sql) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
    db_.fail("preparing '" + sql.substr(0, 60) + "'");
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, const Value& value) {
  int rc = SQLITE_OK;
  if (std::holds_alternative<std::nullptr_t>(value))
    rc = sqlite3_bind_null(stmt_, index);
  else if (auto* i = std::get_if<std::int64_t>(&value))
    rc = sqlite3_bind_int64(stmt_, index, *i);
  else if (auto* d = std::get_if<double>(&value))
    rc = sqlite3_bind_double(stmt_, index, *d);
  else {
    const auto& s = std::get<std::string>(value);
    rc = sqlite3_bind_text(stmt_, index, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  if (rc != SQLITE_OK)
    db_.fail("binding parameter " + std::to_string(index) + " of '" + sql_.substr(0, 60) + "'");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  // Before its first row a busy statement has done nothing: reset (bindings stay) and try again.
  for (BusyBackoff backoff; is_busy(rc) && !stepped_ && backoff.wait();) {
    sqlite3_reset(stmt_);
    rc = sqlite3_step(stmt_);
  }
  if (rc == SQLITE_ROW) {
    stepped_ = true;
    return true;
  }
  if (rc == SQLITE_DONE) return false;
  db_.fail("running '" + sql_.substr(0, 60) + "'");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  stepped_ = false;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Statement::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}
bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::string Statement::text(int column) const {
  auto* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}

Transaction::Transaction(Database& db) : db_(db) {
  db_.check_still_the_file();
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {  // a failed rollback leaves SQLite to roll back on close; nothing more to do here
    }
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace schedlab::sql
