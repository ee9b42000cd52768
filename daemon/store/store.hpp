#pragma once
// The store indexes result bundles (runs, repetitions, metrics, kernel identities) and keeps the
// daemon's campaign progress. Bundles on disk stay the source of truth: the index can be rebuilt
// from them. SQLite implements it for one box (sqlite_store.cpp), PostgreSQL for a lab whose boxes share one
// database (postgres_store.cpp).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

struct HistoryPoint {
  std::string started_at;     // the bundle's start
  std::string configuration;  // label, or the kernel release on the running kernel
  std::string kernel_release;
  std::string instance_id;  // a sweep's spells its values: "yield.threads=2"
  std::string params_hash;  // of the instance's resolved parameters: one instance is (id, params_hash)
  double median = 0;        // of the ok repetitions
  std::string unit;
  int repetitions = 0;  // ok ones
  std::string bundle_path;
  std::string host;  // the bundle's hostname: `changes` keeps one series per host
};

struct CampaignRun {
  std::int64_t id = 0;
  std::string campaign;
  std::string content_hash;
  std::string scheduled_for;  // UTC timestamp of the schedule elapse it serves; "" for once
  std::string started_at;
  std::string finished_at;  // "" while unfinished
  std::string status;       // running | finished | superseded
  int steps_total = 0;
};

// A change point's status as last decided (`schedlab changes`, the daemon's confirmation by rerun). Keyed
// by its series (changes/series_changes.hpp SeriesKey::text()) and `at`, the first run after it.
struct ChangeRecord {
  std::string series, at;
  std::string workload, metric, host, instance_id, params_hash;
  std::string configuration;  // of the first run after the change, as the exporter labels it
  std::string direction;      // worse | better
  std::string status;         // suspected | confirmed | not reproduced | unconfirmable
  std::string reason;         // why that status: the rerun's verdict, or what makes it unconfirmable
  double relative = 0, lower = 0, upper = 0, p_value = 1;  // the change's size (ratio) and interval
  std::string rerun;                                       // the rerun's experiment record, when one ran
  std::string updated_at;                                  // when the status was set
};

enum class StepStatus { kPending, kRunning, kFinished, kFailed };
std::string to_string(StepStatus s);
StepStatus parse_step_status(const std::string& s);  // to_string's inverse; anything else is pending

struct StepRecord {
  std::string key;
  int index = 0;
  StepStatus status = StepStatus::kPending;
  int attempts = 0;
  std::string attempt_dir;
  std::string bundle_path;
  std::string reason;
  std::string started_at;   // of the latest attempt (UTC timestamp); its machine time with finished_at
  std::string finished_at;  // "" while pending or running
};

class Store {
 public:
  virtual ~Store() = default;

  // Indexes a bundle file; false when that path is indexed already (indexing is idempotent).
  virtual bool index_bundle(const std::filesystem::path& path, const Bundle& bundle) = 0;
  virtual int bundle_count() = 0;
  virtual int repetition_count() = 0;  // timed repetitions indexed, any status
  // Median of the ok repetitions of `metric` per bundle and instance (id and params_hash) of
  // `workload`, oldest first; `kernel` (empty: any) matches the configuration label or the kernel
  // release; `instance` (empty: any) matches the instance id, or its params_hash or a prefix of it
  // (6 characters or more); `host` (empty: any) as bundle_paths' below.
  virtual std::vector<HistoryPoint> history(const std::string& workload, const std::string& metric,
                                            const std::string& kernel, const std::string& instance,
                                            const std::string& host) = 0;
  // The indexed bundles a diff side names: `query` is a label, a configuration name or a prefix of a
  // configuration hash (6 characters or more); `host` (empty: any) a glob ('*', '?') the bundle's hostname
  // matches, or in PostgreSQL (a lab's store, of many classes) also its host class's label or shape, as
  // the queue's --hosts does. Paths as indexed, oldest first.
  virtual std::vector<std::string> bundle_paths(const std::string& query, const std::string& host) = 0;
  // The metric names indexed for `workload` (any status), sorted: what `history --metric` can name.
  virtual std::vector<std::string> metric_names(const std::string& workload) = 0;
  // Median wall seconds of one timed repetition per "WORKLOAD/PARAMS_HASH" (resolved parameters, as
  // bundles record them), over everything indexed.
  virtual std::map<std::string, double> seconds_per_repetition() = 0;

  // Campaign progress.
  virtual std::optional<CampaignRun> unfinished_run(const std::string& campaign) = 0;
  virtual std::optional<CampaignRun> last_run(const std::string& campaign) = 0;
  virtual CampaignRun begin_run(const std::string& campaign, const std::string& content_hash,
                                const std::string& scheduled_for, int steps_total) = 0;
  virtual void end_run(std::int64_t run, const std::string& status) = 0;
  // When the daemon first saw a campaign (a schedule's persistence starts there); recorded on first call.
  virtual std::string first_seen(const std::string& campaign) = 0;
  // Every campaign run, oldest first, and every campaign's first sighting (campaign -> timestamp): what
  // `store import` copies from one store into another.
  virtual std::vector<CampaignRun> runs() = 0;
  virtual std::map<std::string, std::string> campaigns_first_seen() = 0;

  virtual std::map<std::string, StepRecord> steps(std::int64_t run) = 0;
  // Marks a step running with one more attempt, before its process starts.
  virtual void begin_step(std::int64_t run, int index, const std::string& key,
                          const std::filesystem::path& attempt_dir) = 0;
  // In one transaction: the step's bundle indexed (when there is one) and the step ended. A crash
  // before the commit leaves the step running, to be discarded and rerun: never recorded twice.
  virtual void end_step(std::int64_t run, const std::string& key, StepStatus status,
                        const std::optional<std::filesystem::path>& bundle_path, const Bundle* bundle,
                        const std::string& reason) = 0;
  // A running step whose attempt was abandoned (killed daemon, SIGTERM): back to pending.
  virtual void abandon_step(std::int64_t run, const std::string& key, const std::string& reason) = 0;

  // Change points: inserted or replaced by (series, at); all of them, oldest `at` first. A store made
  // before change points has none (a reader sees an empty list).
  virtual void record_change(const ChangeRecord& change) = 0;
  virtual std::vector<ChangeRecord> change_records() = 0;

  // Drops the bundle index and re-indexes every bundle under `dir` (campaign progress is kept).
  // Returns the number indexed; a file that does not load is reported in `skipped`.
  virtual int rebuild(const std::filesystem::path& dir, std::vector<std::string>& skipped) = 0;

  // Called inside end_step's transaction just before its commit: the fault test stops the daemon
  // there to prove a half-written step is never counted.
  void set_commit_hook(std::function<void()> hook) { commit_hook_ = std::move(hook); }

 protected:
  void before_commit() const {
    if (commit_hook_) commit_hook_();
  }

 private:
  std::function<void()> commit_hook_;
};

// "sqlite:///var/lib/schedlab/store.db" (or a plain path), or "postgresql://USER@HOST:PORT/DB?..." (libpq's
// URI; the schema is created or upgraded on opening). Throws InputError for other schemes. `host` scopes a
// shared store's campaign progress to one box ("": this machine's hostname); SQLite has one box.
std::unique_ptr<Store> open_store(const std::string& url, const std::string& host = "");
// The same for a reader (`schedlab history`): never creates a file or a directory, nor changes the
// schema. Throws InputError "no store at PATH" when there is none, and for a file that is not a store.
std::unique_ptr<Store> open_store_to_read(const std::string& url, const std::string& host = "");
// An SQLite store (sqlite_store.cpp); open_store chooses it for sqlite:// URLs and plain paths.
std::unique_ptr<Store> open_sqlite_store(const std::filesystem::path& file, bool for_reading);

// Every bundle file (*.json) under `dir`, sorted, leaving out the attempts the daemon discarded
// (*.discarded directories: a killed or abandoned step's, never results). InputError when `dir` is not a
// directory.
std::vector<std::filesystem::path> bundle_files(const std::filesystem::path& dir);

// The configuration a bundle measured, as dashboards and history name it: its label when one was
// given, else the kernel release (on the running kernel).
std::string configuration_name(const Bundle& bundle);

}  // namespace schedlab
