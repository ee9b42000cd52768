// The PostgreSQL store against a real server (Debian's postgresql, started on a temp dir by the test):
// the same answers as the SQLite store on the same real bundles, the same exactly-once guarantees, campaign
// progress kept per box, the schema's migration, a server restart under an open store, and the import of a
// box's SQLite store.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"
#include "daemon/store/store.hpp"
#include "postgres_server.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::PostgresServer;
using testing::TempDir;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "bundles");
    for (const auto& sub : {"counters-per-cgroup", "counters-per-task"})
      for (const auto& e : fs::directory_iterator(fs::path(SCHEDLAB_FIXTURES_DIR) / "profile" / sub))
        if (e.path().extension() == ".json") {
          fs::copy_file(e.path(), dir_.path() / "bundles" / e.path().filename());
          files_.push_back(dir_.path() / "bundles" / e.path().filename());
        }
    std::sort(files_.begin(), files_.end());
  }

  std::string sqlite_url() const { return "sqlite://" + (dir_.path() / "store.db").string(); }

  PostgresServer server_;
  TempDir dir_;
  std::vector<fs::path> files_;
};

TEST_F(PostgresStoreTest, AnswersHistoryExactlyAsTheSqliteStoreDoesOnTheSameBundles) {
  ASSERT_EQ(files_.size(), 4u);
  auto pg = open_store(server_.url());
  auto lite = open_store(sqlite_url());
  for (const auto& f : files_) {
    EXPECT_TRUE(pg->index_bundle(f, load_bundle(f)));
    EXPECT_TRUE(lite->index_bundle(f, load_bundle(f)));
  }
  EXPECT_FALSE(pg->index_bundle(files_[0], load_bundle(files_[0])));  // idempotent by path
  EXPECT_EQ(pg->bundle_count(), 4);
  EXPECT_EQ(pg->repetition_count(), lite->repetition_count());
  EXPECT_GT(pg->repetition_count(), 4);

  for (const std::string kernel : {"", "counters-per-task", "no-such-kernel"}) {
    const auto a = pg->history("yield", "ns_per_yield", kernel, "", "");
    const auto b = lite->history("yield", "ns_per_yield", kernel, "", "");
    ASSERT_EQ(a.size(), b.size()) << kernel;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].started_at, b[i].started_at);
      EXPECT_EQ(a[i].configuration, b[i].configuration);
      EXPECT_EQ(a[i].params_hash, b[i].params_hash);
      EXPECT_DOUBLE_EQ(a[i].median, b[i].median);  // values travel as %.17g text: no rounding
      EXPECT_EQ(a[i].repetitions, b[i].repetitions);
      EXPECT_EQ(a[i].host, b[i].host);
    }
  }
  EXPECT_EQ(pg->history("yield", "ns_per_yield", "", "", "").size(), 4u);
  EXPECT_EQ(pg->metric_names("yield"), lite->metric_names("yield"));
  EXPECT_EQ(pg->seconds_per_repetition(), lite->seconds_per_repetition());
  const auto prefix = pg->history("yield", "ns_per_yield", "", "", "")[0].params_hash.substr(0, 6);
  EXPECT_EQ(pg->history("yield", "ns_per_yield", "", prefix, "").size(),
            lite->history("yield", "ns_per_yield", "", prefix, "").size());
}

TEST_F(PostgresStoreTest, ABundleCopiedUnderAnotherPathIsIndexedOnceByItsRunIdAndTrial) {
  auto store = open_store(server_.url());
  ASSERT_TRUE(store->index_bundle(files_[0], load_bundle(files_[0])));
  const auto copy = dir_.path() / "copy.json";
  fs::copy_file(files_[0], copy);
  EXPECT_FALSE(store->index_bundle(copy, load_bundle(copy)));
  EXPECT_EQ(store->bundle_count(), 1);
}

TEST_F(PostgresStoreTest, AStepIsRecordedOnceAndACrashBeforeCommitLeavesItRunning) {
  auto store = open_store(server_.url(), "box-a");
  const auto run = store->begin_run("nightly", "hash", "", 2);
  const auto bundle = load_bundle(files_[1]);
  store->begin_step(run.id, 0, "t1/running/yield", dir_.path() / "a1");
  store->set_commit_hook([] { throw std::runtime_error("killed"); });
  EXPECT_THROW(store->end_step(run.id, "t1/running/yield", StepStatus::kFinished, files_[1], &bundle, ""),
               std::runtime_error);
  store->set_commit_hook(nullptr);
  EXPECT_EQ(store->bundle_count(), 0) << "the bundle of a step whose end was not committed is not indexed";
  EXPECT_EQ(store->steps(run.id).at("t1/running/yield").status, StepStatus::kRunning);

  store->abandon_step(run.id, "t1/running/yield", "daemon killed");
  store->begin_step(run.id, 0, "t1/running/yield", dir_.path() / "a2");
  store->end_step(run.id, "t1/running/yield", StepStatus::kFinished, files_[1], &bundle, "");
  // Another box (or a daemon restarted after the commit) ending it again indexes nothing twice.
  store->end_step(run.id, "t1/running/yield", StepStatus::kFinished, files_[1], &bundle, "");
  const auto step = store->steps(run.id).at("t1/running/yield");
  EXPECT_EQ(step.status, StepStatus::kFinished);
  EXPECT_EQ(step.attempts, 2);
  EXPECT_EQ(store->bundle_count(), 1);
}

TEST_F(PostgresStoreTest, CampaignProgressIsEachBoxsOwn) {
  auto a = open_store(server_.url(), "box-a");
  auto b = open_store(server_.url(), "box-b");
  const auto run = a->begin_run("nightly", "hash", "2026-12-07T02:00:00Z", 3);
  EXPECT_EQ(a->unfinished_run("nightly")->id, run.id);
  EXPECT_FALSE(b->unfinished_run("nightly")) << "box-b must not resume box-a's run";
  EXPECT_FALSE(b->last_run("nightly"));
  const auto seen_a = a->first_seen("nightly");
  EXPECT_EQ(a->first_seen("nightly"), seen_a);
  EXPECT_EQ(a->runs().size(), 1u);
  EXPECT_TRUE(b->runs().empty());
  a->end_run(run.id, "finished");
  EXPECT_FALSE(a->unfinished_run("nightly"));
  EXPECT_EQ(a->last_run("nightly")->status, "finished");
  ASSERT_FALSE(a->last_run("nightly")->finished_at.empty());
}

TEST_F(PostgresStoreTest, AReaderNeedsTheSchemaWhichMigrateCreatesOnceEvenWhenManyTryAtOnce) {
  try {
    open_store_to_read(server_.url());
    FAIL() << "a database without the schema opened as a store";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("store migrate"), std::string::npos) << e.what();
  }
  std::vector<std::thread> boxes;
  std::atomic<int> failures{0};
  for (int i = 0; i < 6; ++i)
    boxes.emplace_back([&] {
      try {
        EXPECT_EQ(migrate_store(server_.url()), 1);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  for (auto& t : boxes) t.join();
  EXPECT_EQ(failures.load(), 0);
  pg::Connection db(server_.url());
  EXPECT_EQ(db.query("SELECT count(*) FROM schedlab_schema").integer(0, 0), 1);
  EXPECT_EQ(open_store_to_read(server_.url())->bundle_count(), 0);

  db.query("INSERT INTO schedlab_schema (version) VALUES (2)");
  try {
    open_store(server_.url());
    FAIL() << "a newer schema was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this schedlab knows"), std::string::npos) << e.what();
  }
}

TEST_F(PostgresStoreTest, AnOpenStoreSurvivesTheServerRestartingAndSaysWhileItIsDown) {
  auto store = open_store(server_.url());
  ASSERT_TRUE(store->index_bundle(files_[0], load_bundle(files_[0])));
  server_.stop();
  EXPECT_THROW(store->index_bundle(files_[1], load_bundle(files_[1])), pg::DatabaseUnavailable);
  EXPECT_THROW(open_store(server_.url()), pg::DatabaseUnavailable);
  server_.start();
  EXPECT_TRUE(store->index_bundle(files_[1], load_bundle(files_[1])));  // reconnected
  EXPECT_EQ(store->bundle_count(), 2);
}

TEST_F(PostgresStoreTest, ImportCopiesABoxsBundlesAndItsCampaignProgressOnce) {
  {
    auto lite = open_store(sqlite_url());
    const auto run = lite->begin_run("nightly", "hash", "", 2);
    lite->first_seen("nightly");
    const auto bundle = load_bundle(files_[0]);
    lite->begin_step(run.id, 0, "t1/running/yield", dir_.path() / "a1");
    lite->end_step(run.id, "t1/running/yield", StepStatus::kFinished, files_[0], &bundle, "");
    lite->begin_step(run.id, 1, "t1/running/wakeup", dir_.path() / "b1");
    lite->end_run(run.id, "finished");
    lite->record_change({"series-1", "2026-12-01T02:00:00Z", "yield", "ns_per_yield", "box-a", "yield", "abc",
                         "6.12", "worse", "confirmed", "rerun agreed", 1.05, 1.02, 1.08, 0.01, "", ""});
  }
  std::ofstream(dir_.path() / "bundles" / "broken.json") << "{\"schema\": ";
  auto lite = open_store_to_read(sqlite_url());
  const auto first = import_into_postgres(server_.url(), "box-a", dir_.path() / "bundles", lite.get());
  EXPECT_EQ(first.bundles, 4);
  EXPECT_EQ(first.runs, 1);
  EXPECT_EQ(first.campaigns, 1);
  EXPECT_EQ(first.changes, 1);
  ASSERT_EQ(first.skipped.size(), 1u);
  EXPECT_NE(first.skipped[0].find("broken.json"), std::string::npos);

  const auto again = import_into_postgres(server_.url(), "box-a", dir_.path() / "bundles", lite.get());
  EXPECT_EQ(again.bundles + again.runs + again.campaigns + again.changes, 0);

  auto pg = open_store_to_read(server_.url(), "box-a");
  ASSERT_EQ(pg->runs().size(), 1u);
  const auto run = pg->runs()[0];
  EXPECT_EQ(run.status, "finished");
  const auto steps = pg->steps(run.id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps.at("t1/running/yield").status, StepStatus::kFinished);
  EXPECT_EQ(steps.at("t1/running/wakeup").status, StepStatus::kRunning);
  EXPECT_EQ(pg->campaigns_first_seen(), lite->campaigns_first_seen());
  ASSERT_EQ(pg->change_records().size(), 1u);
  EXPECT_EQ(pg->change_records()[0].status, "confirmed");
  EXPECT_EQ(pg->bundle_count(), 4);
  EXPECT_TRUE(open_store_to_read(server_.url(), "box-b")->runs().empty());
}

// history, diff and the store's commands over a PostgreSQL store, as a person types them.
TEST_F(PostgresStoreTest, HistoryDiffAndTheStoreCommandsTakeAPostgresStoreAndAHost) {
  const std::string bin = SCHEDLAB_BINARY;
  const std::string url = "'" + server_.url() + "'";
  auto migrated = testing::sh(bin + " store migrate --store " + url);
  ASSERT_EQ(migrated.code, 0) << migrated.out;
  EXPECT_NE(migrated.out.find("schema version 1"), std::string::npos) << migrated.out;
  auto imported =
      testing::sh(bin + " store import " + (dir_.path() / "bundles").string() + " --store " + url);
  ASSERT_EQ(imported.code, 0) << imported.out;
  EXPECT_NE(imported.out.find("4 bundle(s) newly indexed"), std::string::npos) << imported.out;

  // The fixtures were measured on host "vm", a 1-socket 2-core AMD EPYC VM.
  auto history =
      testing::sh(bin + " history --store " + url + " --workload yield --metric ns_per_yield --host vm");
  EXPECT_EQ(history.code, 0) << history.out;
  EXPECT_EQ(std::count(history.out.begin(), history.out.end(), '\n'), 5) << history.out;  // header + 4
  history =
      testing::sh(bin + " history --store " + url + " --workload yield --metric ns_per_yield --host nosuch");
  EXPECT_EQ(history.code, 1) << history.out;
  EXPECT_NE(history.out.find("from host nosuch"), std::string::npos) << history.out;

  EXPECT_EQ(
      open_store_to_read(server_.url())->bundle_paths("counters-per-task", "1s-2c-nosmt-1n-amd-epyc").size(),
      2u)
      << "a host class's shape selects its bundles too";
  // --host is a glob, as submit --hosts: of the hostname, the class label or the shape.
  EXPECT_EQ(open_store_to_read(server_.url())->bundle_paths("counters-per-task", "1s-*-amd-*").size(), 2u);
  EXPECT_EQ(open_store_to_read(server_.url())->bundle_paths("counters-per-task", "v?").size(), 2u);
  EXPECT_TRUE(open_store_to_read(server_.url())->bundle_paths("counters-per-task", "rack-*").empty())
      << "the fixtures carry no label";
  EXPECT_TRUE(open_store_to_read(server_.url())->bundle_paths("counters-per-task", "v_").empty())
      << "'_' is no wildcard of a glob";
  auto diff =
      testing::sh(bin + " diff counters-per-cgroup counters-per-task --force --store " + url + " --host vm");
  EXPECT_NE(diff.code, 2) << diff.out;
  EXPECT_NE(diff.out.find("counters-per-cgroup"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("counters-per-task"), std::string::npos) << diff.out;
  diff = testing::sh(bin + " diff counters-per-cgroup counters-per-task --force --store " + url +
                     " --host nosuch");
  EXPECT_EQ(diff.code, 2) << diff.out;
  EXPECT_NE(diff.out.find("counters-per-cgroup: no bundle in postgresql://"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("from host nosuch"), std::string::npos) << diff.out;
}

}  // namespace
}  // namespace schedlab
