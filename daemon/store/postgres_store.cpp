// The PostgreSQL store: the same index and campaign progress as the SQLite store, for a lab whose boxes
// share one database. Exactly-once as there: a step's bundle and its end are one transaction, and unique
// keys (a bundle's path, its run id and trial; a repetition within its bundle; a step within its run)
// make a second insert of the same thing a no-op, whichever box tries it. Campaign progress is kept per
// host: two boxes running campaigns of one name do not share (or steal) each other's runs.
// The schema is versioned in schedlab_schema; `schedlab store migrate` (and every writer that opens the
// store) creates or upgrades it under an advisory lock, so boxes starting together do not race.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "collector/sysinfo/host_class.hpp"
#include "core/bundle_io.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "daemon/store/history_points.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"

namespace schedlab {
namespace {

// SQL: bundle `b` was measured on a host that parameter $N (a --host glob as pg::like_pattern spells it;
// '' : any) names by its hostname, class shape or class label, as the queue matches a worker.
std::string bundle_on_hosts(int n) {
  const std::string p = "$" + std::to_string(n);
  return "(" + p + "::text = '' OR b.host LIKE " + p + " ESCAPE '\\' OR b.host_shape LIKE " + p +
         " ESCAPE '\\' OR (b.host_label <> '' AND b.host_label LIKE " + p + " ESCAPE '\\'))";
}

constexpr int kSchemaVersion = 1;
constexpr std::int64_t kMigrationLock = 0x5C4ED1AB;  // pg_advisory_xact_lock key of the schema's migration
constexpr std::size_t kRowsPerInsert = 500;          // metrics rows per multi-row INSERT

constexpr const char* kSchemaV1 = R"(
CREATE TABLE IF NOT EXISTS bundles (
  id BIGSERIAL PRIMARY KEY, path TEXT UNIQUE NOT NULL, run_id TEXT NOT NULL, trial INTEGER NOT NULL,
  label TEXT, configuration TEXT, configuration_hash TEXT, kernel_release TEXT, host TEXT,
  host_shape TEXT NOT NULL DEFAULT '', host_label TEXT NOT NULL DEFAULT '', started_at TEXT, finished_at TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS bundles_by_run ON bundles (run_id, trial) WHERE run_id <> '';
CREATE TABLE IF NOT EXISTS kernels (
  configuration_hash TEXT PRIMARY KEY, kernel_release TEXT, configuration TEXT, identity TEXT);
CREATE TABLE IF NOT EXISTS repetitions (
  id BIGSERIAL PRIMARY KEY, bundle_id BIGINT NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
  instance_id TEXT NOT NULL, workload TEXT NOT NULL, params_hash TEXT NOT NULL, rep_index INTEGER NOT NULL,
  status TEXT, started_at TEXT, duration_s DOUBLE PRECISION,
  UNIQUE (bundle_id, instance_id, params_hash, rep_index));
CREATE TABLE IF NOT EXISTS metrics (
  repetition_id BIGINT NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE, name TEXT NOT NULL,
  value DOUBLE PRECISION, unit TEXT, PRIMARY KEY (repetition_id, name));
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics (name, repetition_id);
CREATE INDEX IF NOT EXISTS repetitions_by_instance_identity ON repetitions (workload, instance_id, params_hash);
CREATE TABLE IF NOT EXISTS campaigns (host TEXT, name TEXT, first_seen TEXT, PRIMARY KEY (host, name));
CREATE TABLE IF NOT EXISTS campaign_runs (
  id BIGSERIAL PRIMARY KEY, host TEXT NOT NULL, campaign TEXT NOT NULL, content_hash TEXT, scheduled_for TEXT,
  started_at TEXT, finished_at TEXT, status TEXT, steps_total INTEGER);
CREATE INDEX IF NOT EXISTS campaign_runs_by_campaign ON campaign_runs (host, campaign, id);
CREATE TABLE IF NOT EXISTS steps (
  run_id BIGINT REFERENCES campaign_runs(id), step_key TEXT, step_index INTEGER, status TEXT,
  attempts INTEGER, attempt_dir TEXT, bundle_path TEXT, started_at TEXT, finished_at TEXT, reason TEXT,
  PRIMARY KEY (run_id, step_key));
CREATE TABLE IF NOT EXISTS queue_submissions (
  id BIGSERIAL PRIMARY KEY, campaign TEXT NOT NULL, content_hash TEXT NOT NULL, campaign_file TEXT NOT NULL,
  campaign_text TEXT NOT NULL, hosts TEXT NOT NULL, submitted_at TEXT NOT NULL, submitted_by TEXT NOT NULL,
  steps_total INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS queue_steps (
  submission_id BIGINT NOT NULL REFERENCES queue_submissions(id), step_key TEXT NOT NULL,
  step_index INTEGER NOT NULL, hosts_like TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
  claimed_by TEXT NOT NULL DEFAULT '', lease_until TIMESTAMPTZ, reclaimed_from TEXT NOT NULL DEFAULT '',
  attempt_dir TEXT NOT NULL DEFAULT '', bundle_path TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL DEFAULT '', finished_at TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (submission_id, step_key));
CREATE INDEX IF NOT EXISTS queue_steps_open ON queue_steps (status, submission_id, step_index);
CREATE TABLE IF NOT EXISTS queue_workers (
  host TEXT PRIMARY KEY, class TEXT NOT NULL, label TEXT NOT NULL, shape TEXT NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL);
CREATE TABLE IF NOT EXISTS change_points (
  series TEXT, at TEXT, workload TEXT, metric TEXT, host TEXT, instance_id TEXT, params_hash TEXT,
  configuration TEXT, direction TEXT, status TEXT, reason TEXT, relative DOUBLE PRECISION,
  lower DOUBLE PRECISION, upper DOUBLE PRECISION, p_value DOUBLE PRECISION, rerun TEXT, updated_at TEXT,
  PRIMARY KEY (series, at));
)";

int schema_version(pg::Connection& db) {
  auto exists = db.query("SELECT to_regclass('schedlab_schema') IS NOT NULL");
  if (exists.text(0, 0) != "t") return 0;
  auto v = db.query("SELECT max(version) FROM schedlab_schema");
  return v.is_null(0, 0) ? 0 : static_cast<int>(v.integer(0, 0));
}

void check_version(pg::Connection& db, int version) {
  if (version > kSchemaVersion)
    throw Error(db.url() + ": store schema version " + std::to_string(version) +
                " is newer than this schedlab knows (" + std::to_string(kSchemaVersion) + ")");
}

class PostgresStore : public Store {
 public:
  PostgresStore(const std::string& url, const std::string& host, bool for_reading)
      : db_(url), host_(store_host(host)) {
    if (for_reading) {
      const int version = schema_version(db_);
      if (version == 0)
        throw InputError(db_.url() + ": not a schedlab store (no schema: `schedlab store migrate --store " +
                         db_.url() + "` creates it)");
      check_version(db_, version);
    } else {
      migrate_store(db_);
    }
  }

  bool index_bundle(const std::filesystem::path& path, const Bundle& bundle) override {
    pg::Transaction tx(db_);
    const bool added = insert_bundle_in(db_, path, bundle);
    tx.commit();
    return added;
  }

  int bundle_count() override { return count("SELECT count(*) FROM bundles"); }
  int repetition_count() override { return count("SELECT count(*) FROM repetitions"); }

  std::vector<HistoryPoint> history(const std::string& workload, const std::string& metric,
                                    const std::string& kernel, const std::string& instance,
                                    const std::string& host) override {
    auto q = db_.query(R"(
      SELECT b.id, b.started_at, b.configuration, b.kernel_release, r.instance_id, r.params_hash, m.value,
             m.unit, b.path, b.host
      FROM metrics m JOIN repetitions r ON m.repetition_id = r.id JOIN bundles b ON r.bundle_id = b.id
      WHERE r.workload = $1 AND m.name = $2 AND r.status = 'ok'
        AND ($3::text = '' OR b.configuration = $3 OR b.kernel_release = $3)
        AND ($4::text = '' OR r.instance_id = $4
             OR (length($4) >= 6 AND substr(r.params_hash, 1, length($4)) = $4))
        AND )" + bundle_on_hosts(5) +
                           R"(
      ORDER BY b.started_at, b.id, r.instance_id, r.params_hash, r.rep_index)",
                       workload, metric, kernel, instance, pg::like_pattern(host));
    HistoryPoints points;
    for (int i = 0; i < q.rows(); ++i)
      points.add(q.integer(i, 0),
                 {q.text(i, 1), q.text(i, 2), q.text(i, 3), q.text(i, 4), q.text(i, 5), 0, q.text(i, 7), 0,
                  q.text(i, 8), q.text(i, 9)},
                 q.real(i, 6));
    return points.take();
  }

  std::vector<std::string> bundle_paths(const std::string& query, const std::string& host) override {
    auto q = db_.query(R"(
      SELECT path FROM bundles b
      WHERE (label = $1 OR configuration = $1
             OR (length($1) >= 6 AND substr(configuration_hash, 1, length($1)) = $1))
        AND )" + bundle_on_hosts(2) +
                           R"(
      ORDER BY started_at, id)",
                       query, pg::like_pattern(host));
    std::vector<std::string> out;
    for (int i = 0; i < q.rows(); ++i) out.push_back(q.text(i, 0));
    return out;
  }

  std::vector<std::string> metric_names(const std::string& workload) override {
    auto q = db_.query(R"(
      SELECT DISTINCT m.name FROM metrics m JOIN repetitions r ON m.repetition_id = r.id
      WHERE r.workload = $1 ORDER BY m.name)",
                       workload);
    std::vector<std::string> out;
    for (int i = 0; i < q.rows(); ++i) out.push_back(q.text(i, 0));
    return out;
  }

  std::map<std::string, double> seconds_per_repetition() override {
    auto q =
        db_.query("SELECT workload || '/' || params_hash, duration_s FROM repetitions WHERE status = 'ok'");
    std::map<std::string, std::vector<double>> by_instance;
    for (int i = 0; i < q.rows(); ++i) by_instance[q.text(i, 0)].push_back(q.real(i, 1));
    std::map<std::string, double> out;
    for (auto& [w, v] : by_instance) out[w] = median(v);
    return out;
  }

  std::optional<CampaignRun> unfinished_run(const std::string& campaign) override {
    return one_run("WHERE host = $1 AND campaign = $2 AND status = 'running' ORDER BY id DESC LIMIT 1",
                   campaign);
  }
  std::optional<CampaignRun> last_run(const std::string& campaign) override {
    return one_run("WHERE host = $1 AND campaign = $2 ORDER BY id DESC LIMIT 1", campaign);
  }

  CampaignRun begin_run(const std::string& campaign, const std::string& content_hash,
                        const std::string& scheduled_for, int steps_total) override {
    auto id = db_.query(
        "INSERT INTO campaign_runs (host, campaign, content_hash, scheduled_for, started_at, finished_at, "
        "status, steps_total) VALUES ($1, $2, $3, $4, $5, '', 'running', $6) RETURNING id",
        host_, campaign, content_hash, scheduled_for, utc_timestamp(), std::int64_t{steps_total});
    return *one_run("WHERE host = $1 AND id = $2::bigint", id.integer(0, 0));
  }

  void end_run(std::int64_t run, const std::string& status) override {
    db_.query("UPDATE campaign_runs SET status = $2, finished_at = $3 WHERE id = $1", run, status,
              utc_timestamp());
  }

  std::string first_seen(const std::string& campaign) override {
    db_.query("INSERT INTO campaigns (host, name, first_seen) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
              host_, campaign, utc_timestamp());
    return db_.query("SELECT first_seen FROM campaigns WHERE host = $1 AND name = $2", host_, campaign)
        .text(0, 0);
  }

  std::vector<CampaignRun> runs() override {
    auto q = db_.query(
        "SELECT id, campaign, content_hash, scheduled_for, started_at, finished_at, status, steps_total "
        "FROM campaign_runs WHERE host = $1 ORDER BY id",
        host_);
    std::vector<CampaignRun> out;
    for (int i = 0; i < q.rows(); ++i)
      out.push_back({q.integer(i, 0), q.text(i, 1), q.text(i, 2), q.text(i, 3), q.text(i, 4), q.text(i, 5),
                     q.text(i, 6), static_cast<int>(q.integer(i, 7))});
    return out;
  }

  std::map<std::string, std::string> campaigns_first_seen() override {
    auto q = db_.query("SELECT name, first_seen FROM campaigns WHERE host = $1", host_);
    std::map<std::string, std::string> out;
    for (int i = 0; i < q.rows(); ++i) out[q.text(i, 0)] = q.text(i, 1);
    return out;
  }

  void record_change(const ChangeRecord& c) override {
    db_.query(R"(
      INSERT INTO change_points (series, at, workload, metric, host, instance_id, params_hash, configuration,
        direction, status, reason, relative, lower, upper, p_value, rerun, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
      ON CONFLICT (series, at) DO UPDATE SET workload = EXCLUDED.workload, metric = EXCLUDED.metric,
        host = EXCLUDED.host, instance_id = EXCLUDED.instance_id, params_hash = EXCLUDED.params_hash,
        configuration = EXCLUDED.configuration, direction = EXCLUDED.direction, status = EXCLUDED.status,
        reason = EXCLUDED.reason, relative = EXCLUDED.relative, lower = EXCLUDED.lower,
        upper = EXCLUDED.upper, p_value = EXCLUDED.p_value, rerun = EXCLUDED.rerun,
        updated_at = EXCLUDED.updated_at)",
              c.series, c.at, c.workload, c.metric, c.host, c.instance_id, c.params_hash, c.configuration,
              c.direction, c.status, c.reason, c.relative, c.lower, c.upper, c.p_value, c.rerun,
              c.updated_at.empty() ? utc_timestamp() : c.updated_at);
  }

  std::vector<ChangeRecord> change_records() override {
    auto q = db_.query(R"(
      SELECT series, at, workload, metric, host, instance_id, params_hash, configuration, direction, status,
             reason, relative, lower, upper, p_value, rerun, updated_at
      FROM change_points ORDER BY at, series)");
    std::vector<ChangeRecord> out;
    for (int i = 0; i < q.rows(); ++i)
      out.push_back({q.text(i, 0), q.text(i, 1), q.text(i, 2), q.text(i, 3), q.text(i, 4), q.text(i, 5),
                     q.text(i, 6), q.text(i, 7), q.text(i, 8), q.text(i, 9), q.text(i, 10), q.real(i, 11),
                     q.real(i, 12), q.real(i, 13), q.real(i, 14), q.text(i, 15), q.text(i, 16)});
    return out;
  }

  std::map<std::string, StepRecord> steps(std::int64_t run) override {
    auto q = db_.query(
        "SELECT step_key, step_index, status, attempts, attempt_dir, bundle_path, reason, started_at, "
        "finished_at FROM steps WHERE run_id = $1",
        run);
    std::map<std::string, StepRecord> out;
    for (int i = 0; i < q.rows(); ++i)
      out[q.text(i, 0)] = {q.text(i, 0),
                           static_cast<int>(q.integer(i, 1)),
                           parse_step_status(q.text(i, 2)),
                           static_cast<int>(q.integer(i, 3)),
                           q.text(i, 4),
                           q.text(i, 5),
                           q.text(i, 6),
                           q.text(i, 7),
                           q.text(i, 8)};
    return out;
  }

  void begin_step(std::int64_t run, int index, const std::string& key,
                  const std::filesystem::path& attempt_dir) override {
    db_.query(R"(
      INSERT INTO steps (run_id, step_key, step_index, status, attempts, attempt_dir, bundle_path, started_at,
                         finished_at, reason)
      VALUES ($1, $2, $3, 'running', 1, $4, '', $5, '', '')
      ON CONFLICT (run_id, step_key) DO UPDATE SET status = 'running', attempts = steps.attempts + 1,
        attempt_dir = $4, started_at = $5, reason = '')",
              run, key, std::int64_t{index}, attempt_dir.string(), utc_timestamp());
  }

  void end_step(std::int64_t run, const std::string& key, StepStatus status,
                const std::optional<std::filesystem::path>& bundle_path, const Bundle* bundle,
                const std::string& reason) override {
    pg::Transaction tx(db_);
    if (bundle_path && bundle) insert_bundle_in(db_, *bundle_path, *bundle);
    db_.query(
        "UPDATE steps SET status = $3, bundle_path = $4, finished_at = $5, reason = $6 "
        "WHERE run_id = $1 AND step_key = $2",
        run, key, to_string(status), bundle_path ? bundle_path->string() : std::string(), utc_timestamp(),
        reason);
    before_commit();
    tx.commit();
  }

  void abandon_step(std::int64_t run, const std::string& key, const std::string& reason) override {
    db_.query("UPDATE steps SET status = 'pending', reason = $3 WHERE run_id = $1 AND step_key = $2", run,
              key, reason);
  }

  int rebuild(const std::filesystem::path& dir, std::vector<std::string>& skipped) override {
    const auto files = bundle_files(dir);
    {
      pg::Transaction tx(db_);
      db_.script("DELETE FROM metrics; DELETE FROM repetitions; DELETE FROM bundles; DELETE FROM kernels;");
      tx.commit();
    }
    return index_files(files, skipped);
  }

 private:
  int index_files(const std::vector<std::filesystem::path>& files, std::vector<std::string>& skipped) {
    int indexed = 0;
    for (const auto& f : files) {
      try {
        const auto bundle = load_bundle(f);
        if (index_bundle(std::filesystem::weakly_canonical(f), bundle)) ++indexed;
      } catch (const InputError& e) {
        skipped.push_back(e.what());
      }
    }
    return indexed;
  }

  int count(const std::string& sql) { return static_cast<int>(db_.query(sql).integer(0, 0)); }

  std::optional<CampaignRun> one_run(const std::string& where, const pg::Value& key) {
    auto q = db_.exec(
        "SELECT id, campaign, content_hash, scheduled_for, started_at, finished_at, status, steps_total "
        "FROM campaign_runs " +
            where,
        {host_, key});
    if (q.rows() == 0) return std::nullopt;
    return CampaignRun{q.integer(0, 0), q.text(0, 1), q.text(0, 2), q.text(0, 3),
                       q.text(0, 4),    q.text(0, 5), q.text(0, 6), static_cast<int>(q.integer(0, 7))};
  }

  pg::Connection db_;
  std::string host_;
};

// "$N, $N+1, ...": `count` placeholders from parameter `first` + 1 on.
std::string placeholders(std::size_t first, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += (i ? ", $" : "$") + std::to_string(first + i + 1);
  return out;
}

}  // namespace

// The unique keys decide: a bundle already there (by path, or by run id and trial under another path) is
// not indexed again.
bool insert_bundle_in(pg::Connection& db, const std::filesystem::path& path, const Bundle& b) {
  const std::string config_hash = b.configuration.value("hash", "");
  const std::string release = b.configuration.value("kernel_release", "");
  const std::string configuration = configuration_name(b);
  const HostClass klass = recorded_host_class(b.host);
  auto inserted =
      db.query(R"(
      INSERT INTO bundles (path, run_id, trial, label, configuration, configuration_hash, kernel_release, host,
                           host_shape, host_label, started_at, finished_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING RETURNING id)",
               path.string(), b.run_id, std::int64_t{b.trial}, b.label, configuration, config_hash, release,
               b.host.value("hostname", ""), klass.shape, klass.label, b.started_at, b.finished_at);
  if (inserted.rows() == 0) return false;
  const auto bundle_id = inserted.integer(0, 0);
  db.query(R"(
      INSERT INTO kernels (configuration_hash, kernel_release, configuration, identity)
      VALUES ($1, $2, $3, $4) ON CONFLICT (configuration_hash) DO UPDATE SET
        kernel_release = EXCLUDED.kernel_release, configuration = EXCLUDED.configuration,
        identity = EXCLUDED.identity)",
           config_hash, release, configuration, b.kernel.dump());

  // All repetitions in one INSERT, then their metrics in a few: a bundle is a handful of round trips,
  // not one per value (100,000 repetitions index in seconds, not minutes).
  std::vector<pg::Value> params;
  std::string sql =
      "INSERT INTO repetitions (bundle_id, instance_id, workload, params_hash, rep_index, status, "
      "started_at, "
      "duration_s) VALUES ";
  std::map<std::tuple<std::string, std::string, int>, const Repetition*> by_key;
  for (const auto& in : b.instances)
    for (const auto& r : in.repetitions) {
      const auto n = params.size();
      sql += (n ? ", (" : "(") + placeholders(n, 8) + ")";
      for (pg::Value v : {pg::Value(bundle_id), pg::Value(in.id), pg::Value(in.workload),
                          pg::Value(in.params_hash), pg::Value(std::int64_t{r.index}), pg::Value(r.status),
                          pg::Value(r.started_at), pg::Value(r.duration_s)})
        params.push_back(std::move(v));
      by_key[{in.id, in.params_hash, r.index}] = &r;
    }
  if (params.empty()) return true;
  auto ids = db.exec(sql + " RETURNING id, instance_id, params_hash, rep_index", params);

  std::vector<pg::Value> rows;
  auto flush = [&] {
    if (rows.empty()) return;
    std::string insert = "INSERT INTO metrics (repetition_id, name, value, unit) VALUES ";
    for (std::size_t n = 0; n < rows.size(); n += 4) insert += (n ? ", (" : "(") + placeholders(n, 4) + ")";
    db.exec(insert, rows);
    rows.clear();
  };
  for (int i = 0; i < ids.rows(); ++i) {
    const auto* r = by_key.at({ids.text(i, 1), ids.text(i, 2), static_cast<int>(ids.integer(i, 3))});
    for (const auto& [name, value] : r->metrics) {
      if (!std::isfinite(value.value)) continue;
      for (pg::Value v :
           {pg::Value(ids.integer(i, 0)), pg::Value(name), pg::Value(value.value), pg::Value(value.unit)})
        rows.push_back(std::move(v));
      if (rows.size() >= kRowsPerInsert * 4) flush();
    }
  }
  flush();
  return true;
}

std::string store_host(const std::string& host) {
  if (!host.empty()) return host;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void migrate_store(pg::Connection& db) {
  pg::Transaction tx(db);
  db.query("SELECT pg_advisory_xact_lock($1)", kMigrationLock);
  const int version = schema_version(db);
  check_version(db, version);
  if (version < 1) {
    db.script(kSchemaV1);
    db.script("CREATE TABLE IF NOT EXISTS schedlab_schema (version INTEGER NOT NULL)");
    db.query("INSERT INTO schedlab_schema (version) VALUES ($1)", std::int64_t{1});
  }
  tx.commit();
}

int migrate_store(const std::string& url) {
  pg::Connection db(url);
  migrate_store(db);
  return schema_version(db);
}

std::unique_ptr<Store> open_postgres_store(const std::string& url, const std::string& host,
                                           bool for_reading) {
  return std::make_unique<PostgresStore>(url, host, for_reading);
}

}  // namespace schedlab
