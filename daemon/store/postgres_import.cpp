// `schedlab store import`: a box's bundles and, from its SQLite store, the campaign progress that bundles do
// not hold (runs, steps, first sightings, change points), into a shared PostgreSQL store.
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"

namespace schedlab {
namespace {

// One run and its steps in one transaction: a crash mid-import leaves the run whole or absent.
bool import_run(pg::Connection& db, const std::string& host, const CampaignRun& run,
                const std::map<std::string, StepRecord>& steps) {
  pg::Transaction tx(db);
  auto there = db.query("SELECT 1 FROM campaign_runs WHERE host = $1 AND campaign = $2 AND started_at = $3",
                        host, run.campaign, run.started_at);
  if (there.rows() > 0) return false;
  const auto id =
      db.query(
            "INSERT INTO campaign_runs (host, campaign, content_hash, scheduled_for, started_at, "
            "finished_at, status, steps_total) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            host, run.campaign, run.content_hash, run.scheduled_for, run.started_at, run.finished_at,
            run.status, std::int64_t{run.steps_total})
          .integer(0, 0);
  for (const auto& [key, s] : steps)
    db.query(
        "INSERT INTO steps (run_id, step_key, step_index, status, attempts, attempt_dir, bundle_path, "
        "started_at, finished_at, reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        id, key, std::int64_t{s.index}, to_string(s.status), std::int64_t{s.attempts}, s.attempt_dir,
        s.bundle_path, s.started_at, s.finished_at, s.reason);
  tx.commit();
  return true;
}

}  // namespace

ImportCounts import_into_postgres(const std::string& url, const std::string& host_or_empty,
                                  const std::filesystem::path& dir, Store* progress) {
  const std::string host = store_host(host_or_empty);
  auto store = open_postgres_store(url, host, false);
  ImportCounts counts;
  for (const auto& file : bundle_files(dir)) {
    try {
      const auto bundle = load_bundle(file);
      if (store->index_bundle(std::filesystem::weakly_canonical(file), bundle)) ++counts.bundles;
    } catch (const InputError& e) {
      counts.skipped.push_back(e.what());
    }
  }
  if (!progress) return counts;

  pg::Connection db(url);
  for (const auto& [campaign, seen] : progress->campaigns_first_seen())
    counts.campaigns += static_cast<int>(
        db.query("INSERT INTO campaigns (host, name, first_seen) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                 host, campaign, seen)
            .affected());
  for (const auto& run : progress->runs())
    if (import_run(db, host, run, progress->steps(run.id))) ++counts.runs;
  for (const auto& change : progress->change_records()) {
    auto there =
        db.query("SELECT 1 FROM change_points WHERE series = $1 AND at = $2", change.series, change.at);
    if (there.rows() > 0) continue;
    store->record_change(change);
    ++counts.changes;
  }
  return counts;
}

}  // namespace schedlab
