// The SQLite store: WAL journal, synchronous=FULL (a box that loses power mid-campaign must not lose
// a committed step), foreign keys on. Schema version 1; additions since (an index) are CREATE ... IF NOT
// EXISTS, made by the next writer to open an older store: no migration, no rebuild.
#include <algorithm>
#include <cmath>

#include "core/bundle_io.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "daemon/store/history_points.hpp"
#include "daemon/store/sqlite.hpp"
#include "daemon/store/store.hpp"

namespace schedlab {
namespace {

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS bundles (
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, run_id TEXT, trial INTEGER, label TEXT,
  configuration TEXT, configuration_hash TEXT, kernel_release TEXT, host TEXT, started_at TEXT,
  finished_at TEXT);
CREATE TABLE IF NOT EXISTS kernels (
  configuration_hash TEXT PRIMARY KEY, kernel_release TEXT, configuration TEXT, identity TEXT);
CREATE TABLE IF NOT EXISTS repetitions (
  id INTEGER PRIMARY KEY, bundle_id INTEGER NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
  instance_id TEXT, workload TEXT, params_hash TEXT, rep_index INTEGER, status TEXT, started_at TEXT,
  duration_s REAL);
CREATE TABLE IF NOT EXISTS metrics (
  repetition_id INTEGER NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE, name TEXT, value REAL,
  unit TEXT);
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(name);
CREATE INDEX IF NOT EXISTS repetitions_by_instance ON repetitions(workload);
CREATE INDEX IF NOT EXISTS repetitions_by_instance_identity ON repetitions(workload, instance_id, params_hash);
CREATE TABLE IF NOT EXISTS campaigns (name TEXT PRIMARY KEY, first_seen TEXT);
CREATE TABLE IF NOT EXISTS campaign_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, campaign TEXT, content_hash TEXT, scheduled_for TEXT,
  started_at TEXT, finished_at TEXT, status TEXT, steps_total INTEGER);
CREATE TABLE IF NOT EXISTS steps (
  run_id INTEGER REFERENCES campaign_runs(id), step_key TEXT, step_index INTEGER, status TEXT,
  attempts INTEGER, attempt_dir TEXT, bundle_path TEXT, started_at TEXT, finished_at TEXT, reason TEXT,
  PRIMARY KEY (run_id, step_key));
CREATE TABLE IF NOT EXISTS change_points (
  series TEXT, at TEXT, workload TEXT, metric TEXT, host TEXT, instance_id TEXT, params_hash TEXT,
  configuration TEXT, direction TEXT, status TEXT, reason TEXT, relative REAL, lower REAL, upper REAL,
  p_value REAL, rerun TEXT, updated_at TEXT, PRIMARY KEY (series, at));
)";

constexpr std::size_t kRebuildBatch = 32;  // bundles per rebuild transaction

class SqliteStore : public Store {
 public:
  struct ForReading {};
  // A reader's store: no schema written (an index added since is the writer's to create), the version
  // only checked.
  SqliteStore(const std::filesystem::path& file, ForReading) : db_(file) {
    bool has_bundles = false;
    try {
      sql::Statement tables(db_,
                            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'bundles'");
      tables.step();
      has_bundles = tables.integer(0) > 0;
    } catch (const Error& e) {  // "file is not a database"
      throw InputError(file.string() + ": not a schedlab store: " + e.what());
    }
    if (!has_bundles) throw InputError(file.string() + ": not a schedlab store (no bundles table)");
    check_version(file);
  }

  explicit SqliteStore(const std::filesystem::path& file) : db_(file) {
    db_.exec("PRAGMA journal_mode=WAL");
    db_.exec("PRAGMA synchronous=FULL");
    db_.exec("PRAGMA foreign_keys=ON");
    db_.exec(kSchema);
    sql::Statement version(db_, "PRAGMA user_version");
    version.step();
    if (version.integer(0) == 0)
      db_.exec("PRAGMA user_version=1");
    else
      check_version(file);
  }

  void check_version(const std::filesystem::path& file) {
    sql::Statement version(db_, "PRAGMA user_version");
    version.step();
    if (version.integer(0) > 1)
      throw Error(file.string() + ": store schema version " + std::to_string(version.integer(0)) +
                  " is newer than this schedlab knows (1)");
  }

  bool index_bundle(const std::filesystem::path& path, const Bundle& bundle) override {
    sql::Transaction tx(db_);
    bool added = insert_bundle(path, bundle);
    tx.commit();
    return added;
  }

  int bundle_count() override { return count("SELECT count(*) FROM bundles"); }
  int repetition_count() override { return count("SELECT count(*) FROM repetitions"); }

  std::vector<HistoryPoint> history(const std::string& workload, const std::string& metric,
                                    const std::string& kernel, const std::string& instance,
                                    const std::string& host) override {
    sql::Statement q(db_, R"(
      SELECT b.id, b.started_at, b.configuration, b.kernel_release, r.instance_id, r.params_hash, m.value,
             m.unit, b.path, b.host
      FROM metrics m JOIN repetitions r ON m.repetition_id = r.id JOIN bundles b ON r.bundle_id = b.id
      WHERE r.workload = ?1 AND m.name = ?2 AND r.status = 'ok'
        AND (?3 = '' OR b.configuration = ?3 OR b.kernel_release = ?3)
        AND (?4 = '' OR r.instance_id = ?4 OR (length(?4) >= 6 AND substr(r.params_hash, 1, length(?4)) = ?4))
        AND (?5 = '' OR b.host GLOB ?5)
      ORDER BY b.started_at, b.id, r.instance_id, r.params_hash, r.rep_index)");
    q.bind_all(workload, metric, kernel, instance, host);
    HistoryPoints points;
    while (q.step())
      points.add(
          q.integer(0),
          {q.text(1), q.text(2), q.text(3), q.text(4), q.text(5), 0, q.text(7), 0, q.text(8), q.text(9)},
          q.real(6));
    return points.take();
  }

  std::vector<std::string> bundle_paths(const std::string& query, const std::string& host) override {
    sql::Statement q(db_, R"(
      SELECT path FROM bundles
      WHERE (label = ?1 OR configuration = ?1
             OR (length(?1) >= 6 AND substr(configuration_hash, 1, length(?1)) = ?1))
        AND (?2 = '' OR host GLOB ?2)
      ORDER BY started_at, id)");
    q.bind_all(query, host);
    std::vector<std::string> out;
    while (q.step()) out.push_back(q.text(0));
    return out;
  }

  std::vector<std::string> metric_names(const std::string& workload) override {
    sql::Statement q(db_, R"(
      SELECT DISTINCT m.name FROM metrics m JOIN repetitions r ON m.repetition_id = r.id
      WHERE r.workload = ?1 ORDER BY m.name)");
    q.bind_all(workload);
    std::vector<std::string> out;
    while (q.step()) out.push_back(q.text(0));
    return out;
  }

  std::map<std::string, double> seconds_per_repetition() override {
    sql::Statement q(
        db_, "SELECT workload || '/' || params_hash, duration_s FROM repetitions WHERE status = 'ok'");
    std::map<std::string, std::vector<double>> by_instance;
    while (q.step()) by_instance[q.text(0)].push_back(q.real(1));
    std::map<std::string, double> out;
    for (auto& [w, v] : by_instance) out[w] = median(v);
    return out;
  }

  std::optional<CampaignRun> unfinished_run(const std::string& campaign) override {
    return one_run("WHERE campaign = ?1 AND status = 'running' ORDER BY id DESC LIMIT 1", campaign);
  }
  std::optional<CampaignRun> last_run(const std::string& campaign) override {
    return one_run("WHERE campaign = ?1 ORDER BY id DESC LIMIT 1", campaign);
  }

  CampaignRun begin_run(const std::string& campaign, const std::string& content_hash,
                        const std::string& scheduled_for, int steps_total) override {
    sql::Transaction tx(db_);
    sql::Statement(
        db_,
        "INSERT INTO campaign_runs (campaign, content_hash, scheduled_for, started_at, finished_at, "
        "status, steps_total) VALUES (?1, ?2, ?3, ?4, '', 'running', ?5)")
        .bind_all(campaign, content_hash, scheduled_for, utc_timestamp(), std::int64_t{steps_total})
        .run();
    auto id = db_.last_insert_id();
    tx.commit();
    return *one_run("WHERE id = ?1", id);
  }

  void end_run(std::int64_t run, const std::string& status) override {
    sql::Statement(db_, "UPDATE campaign_runs SET status = ?2, finished_at = ?3 WHERE id = ?1")
        .bind_all(run, status, utc_timestamp())
        .run();
  }

  std::string first_seen(const std::string& campaign) override {
    sql::Statement(db_, "INSERT OR IGNORE INTO campaigns (name, first_seen) VALUES (?1, ?2)")
        .bind_all(campaign, utc_timestamp())
        .run();
    sql::Statement q(db_, "SELECT first_seen FROM campaigns WHERE name = ?1");
    q.bind_all(campaign);
    q.step();
    return q.text(0);
  }

  std::vector<CampaignRun> runs() override {
    sql::Statement q(db_,
                     "SELECT id, campaign, content_hash, scheduled_for, started_at, finished_at, status, "
                     "steps_total FROM campaign_runs ORDER BY id");
    std::vector<CampaignRun> out;
    while (q.step())
      out.push_back({q.integer(0), q.text(1), q.text(2), q.text(3), q.text(4), q.text(5), q.text(6),
                     static_cast<int>(q.integer(7))});
    return out;
  }

  std::map<std::string, std::string> campaigns_first_seen() override {
    sql::Statement q(db_, "SELECT name, first_seen FROM campaigns");
    std::map<std::string, std::string> out;
    while (q.step()) out[q.text(0)] = q.text(1);
    return out;
  }

  void record_change(const ChangeRecord& c) override {
    sql::Statement(db_, R"(
      INSERT OR REPLACE INTO change_points (series, at, workload, metric, host, instance_id, params_hash,
        configuration, direction, status, reason, relative, lower, upper, p_value, rerun, updated_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17))")
        .bind_all(c.series, c.at, c.workload, c.metric, c.host, c.instance_id, c.params_hash, c.configuration,
                  c.direction, c.status, c.reason, c.relative, c.lower, c.upper, c.p_value, c.rerun,
                  c.updated_at.empty() ? utc_timestamp() : c.updated_at)
        .run();
  }

  std::vector<ChangeRecord> change_records() override {
    std::vector<ChangeRecord> out;
    {
      sql::Statement t(db_,
                       "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'change_points'");
      t.step();
      if (t.integer(0) == 0) return out;  // a store a reader opened, older than change points
    }
    sql::Statement q(db_, R"(
      SELECT series, at, workload, metric, host, instance_id, params_hash, configuration, direction, status,
             reason, relative, lower, upper, p_value, rerun, updated_at
      FROM change_points ORDER BY at, series)");
    while (q.step())
      out.push_back({q.text(0), q.text(1), q.text(2), q.text(3), q.text(4), q.text(5), q.text(6), q.text(7),
                     q.text(8), q.text(9), q.text(10), q.real(11), q.real(12), q.real(13), q.real(14),
                     q.text(15), q.text(16)});
    return out;
  }

  std::map<std::string, StepRecord> steps(std::int64_t run) override {
    sql::Statement q(
        db_,
        "SELECT step_key, step_index, status, attempts, attempt_dir, bundle_path, reason, started_at, "
        "finished_at FROM steps "
        "WHERE run_id = ?1");
    q.bind_all(run);
    std::map<std::string, StepRecord> out;
    while (q.step())
      out[q.text(0)] = {q.text(0),
                        static_cast<int>(q.integer(1)),
                        parse_step_status(q.text(2)),
                        static_cast<int>(q.integer(3)),
                        q.text(4),
                        q.text(5),
                        q.text(6),
                        q.text(7),
                        q.text(8)};
    return out;
  }

  void begin_step(std::int64_t run, int index, const std::string& key,
                  const std::filesystem::path& attempt_dir) override {
    sql::Statement(db_, R"(
      INSERT INTO steps (run_id, step_key, step_index, status, attempts, attempt_dir, bundle_path, started_at,
                         finished_at, reason)
      VALUES (?1, ?2, ?3, 'running', 1, ?4, '', ?5, '', '')
      ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'running', attempts = attempts + 1,
        attempt_dir = ?4, started_at = ?5, reason = '')")
        .bind_all(run, key, std::int64_t{index}, attempt_dir.string(), utc_timestamp())
        .run();
  }

  void end_step(std::int64_t run, const std::string& key, StepStatus status,
                const std::optional<std::filesystem::path>& bundle_path, const Bundle* bundle,
                const std::string& reason) override {
    sql::Transaction tx(db_);
    if (bundle_path && bundle) insert_bundle(*bundle_path, *bundle);
    sql::Statement(db_,
                   "UPDATE steps SET status = ?3, bundle_path = ?4, finished_at = ?5, reason = ?6 "
                   "WHERE run_id = ?1 AND step_key = ?2")
        .bind_all(run, key, to_string(status), bundle_path ? bundle_path->string() : std::string(),
                  utc_timestamp(), reason)
        .run();
    before_commit();
    tx.commit();
  }

  void abandon_step(std::int64_t run, const std::string& key, const std::string& reason) override {
    sql::Statement(db_,
                   "UPDATE steps SET status = 'pending', reason = ?3 WHERE run_id = ?1 AND step_key = ?2")
        .bind_all(run, key, reason)
        .run();
  }

  int rebuild(const std::filesystem::path& dir, std::vector<std::string>& skipped) override {
    const auto files = bundle_files(dir);
    {
      sql::Transaction tx(db_);
      db_.exec("DELETE FROM metrics; DELETE FROM repetitions; DELETE FROM bundles; DELETE FROM kernels;");
      tx.commit();
    }
    // In batches, each its own short transaction: a daemon ending a step meanwhile waits for one batch,
    // not for the whole rebuild. Its bundle, indexed between two batches, is not indexed twice.
    int indexed = 0;
    for (std::size_t begin = 0; begin < files.size(); begin += kRebuildBatch) {
      const std::size_t end = std::min(files.size(), begin + kRebuildBatch);
      std::vector<std::pair<std::filesystem::path, Bundle>> batch;  // loaded before the lock is taken
      for (std::size_t i = begin; i < end; ++i) {
        try {
          batch.emplace_back(std::filesystem::weakly_canonical(files[i]), load_bundle(files[i]));
        } catch (const InputError& e) {
          skipped.push_back(e.what());
        }
      }
      sql::Transaction tx(db_);
      for (const auto& [path, bundle] : batch) insert_bundle(path, bundle);
      tx.commit();
      indexed += static_cast<int>(batch.size());
    }
    return indexed;
  }

 private:
  int count(const std::string& sql) {
    sql::Statement q(db_, sql);
    q.step();
    return static_cast<int>(q.integer(0));
  }

  std::optional<CampaignRun> one_run(const std::string& where, const sql::Value& key) {
    sql::Statement q(db_,
                     "SELECT id, campaign, content_hash, scheduled_for, started_at, finished_at, status, "
                     "steps_total FROM campaign_runs " +
                         where);
    q.bind(1, key);
    if (!q.step()) return std::nullopt;
    return CampaignRun{q.integer(0), q.text(1), q.text(2), q.text(3),
                       q.text(4),    q.text(5), q.text(6), static_cast<int>(q.integer(7))};
  }

  // Inside the caller's transaction.
  bool insert_bundle(const std::filesystem::path& path, const Bundle& b) {
    sql::Statement exists(db_, "SELECT id FROM bundles WHERE path = ?1");
    exists.bind_all(path.string());
    if (exists.step()) return false;
    const std::string config_hash = b.configuration.value("hash", "");
    const std::string release = b.configuration.value("kernel_release", "");
    const std::string configuration = configuration_name(b);
    sql::Statement(
        db_,
        "INSERT INTO bundles (path, run_id, trial, label, configuration, configuration_hash, "
        "kernel_release, host, started_at, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
        .bind_all(path.string(), b.run_id, std::int64_t{b.trial}, b.label, configuration, config_hash,
                  release, b.host.value("hostname", ""), b.started_at, b.finished_at)
        .run();
    const auto bundle_id = db_.last_insert_id();
    sql::Statement(
        db_,
        "INSERT OR REPLACE INTO kernels (configuration_hash, kernel_release, configuration, identity) "
        "VALUES (?1, ?2, ?3, ?4)")
        .bind_all(config_hash, release, configuration, b.kernel.dump())
        .run();
    sql::Statement rep(
        db_,
        "INSERT INTO repetitions (bundle_id, instance_id, workload, params_hash, rep_index, status, "
        "started_at, duration_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    sql::Statement metric(db_,
                          "INSERT INTO metrics (repetition_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)");
    for (const auto& in : b.instances)
      for (const auto& r : in.repetitions) {
        rep.reset();
        rep.bind_all(bundle_id, in.id, in.workload, in.params_hash, std::int64_t{r.index}, r.status,
                     r.started_at, r.duration_s)
            .run();
        const auto rep_id = db_.last_insert_id();
        for (const auto& [name, value] : r.metrics) {
          if (!std::isfinite(value.value)) continue;
          metric.reset();
          metric.bind_all(rep_id, name, value.value, value.unit).run();
        }
      }
    return true;
  }

  sql::Database db_;
};

}  // namespace

std::string to_string(StepStatus s) {
  switch (s) {
    case StepStatus::kRunning:
      return "running";
    case StepStatus::kFinished:
      return "finished";
    case StepStatus::kFailed:
      return "failed";
    case StepStatus::kPending:
      break;
  }
  return "pending";
}

StepStatus parse_step_status(const std::string& s) {
  if (s == "running") return StepStatus::kRunning;
  if (s == "finished") return StepStatus::kFinished;
  if (s == "failed") return StepStatus::kFailed;
  return StepStatus::kPending;
}

std::string configuration_name(const Bundle& bundle) {
  if (!bundle.label.empty()) return bundle.label;
  return bundle.configuration.value("kernel_release", "unknown");
}

std::unique_ptr<Store> open_sqlite_store(const std::filesystem::path& file, bool for_reading) {
  if (for_reading) return std::make_unique<SqliteStore>(file, SqliteStore::ForReading{});
  return std::make_unique<SqliteStore>(file);
}

}  // namespace schedlab
