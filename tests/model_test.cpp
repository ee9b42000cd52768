#include <sys/stat.h>

#include <gtest/gtest.h>

#include "core/atomic_file.hpp"
#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/json_cursor.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using testing::slurp;
using testing::spit;
using testing::TempDir;

Bundle sample_bundle() {
  Bundle b;
  b.run_id = "20261130T120000Z-abcdef";
  b.started_at = "2026-11-30T12:00:00.000Z";
  b.finished_at = "2026-11-30T12:00:10.000Z";
  b.seed = 42;
  b.events = {"cycles:u", "perf::CONTEXT-SWITCHES"};
  b.host = {{"cpu_model", "AMD EPYC"}};
  b.kernel = {{"release", "6.18.44"}};
  Instance in;
  in.id = "yield";
  in.workload = "yield";
  in.workload_version = "1.0.0";
  in.params = {{"threads", 1}, {"yields", 1000}};
  in.params_hash = "0123456789abcdef";
  in.metric_info["ns_per_yield"] = {"ns", Direction::kLowerIsBetter, true, "cost of one yield"};
  Repetition warm;
  warm.warmup = true;
  warm.started_at = b.started_at;
  warm.duration_s = 1.5;
  warm.metrics["ns_per_yield"] = {1300.5, "ns"};
  in.warmup = warm;
  for (int i = 0; i < 3; ++i) {
    Repetition r;
    r.index = i;
    r.started_at = b.started_at;
    r.duration_s = 1.25 + i;
    r.metrics["ns_per_yield"] = {1200.0 + i, "ns"};
    CounterReading ok;
    ok.value = 1000.0 + i;
    ok.raw = 1000 + static_cast<unsigned>(i);
    ok.time_enabled_ns = 10;
    ok.time_running_ns = 10;
    r.counters["perf::CONTEXT-SWITCHES"] = ok;
    CounterReading no;
    no.status = status::kUnsupported;
    no.error_number = 2;
    no.reason = "no PMU";
    r.counters["cycles:u"] = no;
    in.repetitions.push_back(r);
  }
  in.repetitions.back().status = status::kTimeout;
  in.repetitions.back().reason = "time limit";
  b.instances.push_back(in);
  return b;
}

std::string write_sample(const TempDir& dir) {
  auto path = dir.path() / "b.json";
  write_bundle(path, sample_bundle());
  return path.string();
}

// The error of loading `text`, which must fail.
std::string load_error(const TempDir& dir, const std::string& text) {
  auto path = dir.path() / "bad.json";
  spit(path, text);
  try {
    load_bundle(path);
  } catch (const BundleError& e) {
    return e.what();
  }
  ADD_FAILURE() << "loading did not fail: " << text.substr(0, 200);
  return "";
}

TEST(Model, RoundTripKeepsEveryField) {
  TempDir dir;
  auto path = write_sample(dir);
  Bundle b = load_bundle(path);
  EXPECT_EQ(to_json(b), to_json(sample_bundle()));
  ASSERT_EQ(b.instances.size(), 1u);
  const auto& in = b.instances[0];
  ASSERT_TRUE(in.warmup.has_value());
  EXPECT_TRUE(in.warmup->warmup);
  ASSERT_EQ(in.repetitions.size(), 3u);
  EXPECT_EQ(in.repetitions[2].status, "timeout");
  EXPECT_DOUBLE_EQ(in.repetitions[1].metrics.at("ns_per_yield").value, 1201.0);
  EXPECT_EQ(in.repetitions[0].counters.at("cycles:u").error_number, 2);
  EXPECT_FALSE(in.repetitions[0].counters.at("cycles:u").ok());
  EXPECT_EQ(in.metric_info.at("ns_per_yield").direction, Direction::kLowerIsBetter);
}

TEST(Model, UnsupportedCounterCarriesErrnoAndNoValue) {
  auto j = to_json(sample_bundle());
  auto c = j["instances"][0]["repetitions"][0]["counters"]["cycles:u"];
  EXPECT_EQ(c["status"], "unsupported");
  EXPECT_EQ(c["errno"], 2);
  EXPECT_FALSE(c.contains("value"));
}

TEST(Model, ReadersIgnoreUnknownFields) {
  auto j = to_json(sample_bundle());
  j["added_in_a_later_version"] = {1, 2};
  j["instances"][0]["repetitions"][0]["new_field"] = "x";
  j["instances"][0]["repetitions"][0]["status"] = "boot-failed";  // a status this reader does not know
  EXPECT_NO_THROW(bundle_from_json(j, "x.json"));
}

TEST(Model, WrongSchemaIsRefusedNamingFileAndField) {
  TempDir dir;
  auto j = to_json(sample_bundle());
  j["schema"] = "schedlab.result/3";
  auto err = load_error(dir, j.dump());
  EXPECT_NE(err.find("bad.json: /schema: unsupported schema 'schedlab.result/3' (this build reads "
                     "schedlab.result/1 and schedlab.result/2)"),
            std::string::npos)
      << err;
}

TEST(Model, MissingFieldIsNamedByItsPath) {
  TempDir dir;
  auto j = to_json(sample_bundle());
  j["instances"][0]["repetitions"][1].erase("status");
  auto err = load_error(dir, j.dump());
  EXPECT_NE(err.find("bad.json: /instances/0/repetitions/1/status: missing required field"),
            std::string::npos)
      << err;
}

TEST(Model, NanMetricIsRefused) {
  TempDir dir;
  auto j = to_json(sample_bundle());
  // JSON has no NaN: a NaN written by nlohmann becomes null.
  j["instances"][0]["repetitions"][2]["metrics"]["ns_per_yield"]["value"] = std::nan("");
  auto err = load_error(dir, j.dump());
  EXPECT_NE(err.find("/instances/0/repetitions/2/metrics/ns_per_yield/value: expected a number, got null"),
            std::string::npos)
      << err;
}

TEST(Model, NegativeDurationIsRefused) {
  TempDir dir;
  auto j = to_json(sample_bundle());
  j["instances"][0]["repetitions"][0]["duration_s"] = -0.5;
  auto err = load_error(dir, j.dump());
  EXPECT_NE(err.find("/instances/0/repetitions/0/duration_s: a duration cannot be negative"),
            std::string::npos)
      << err;
  j = to_json(sample_bundle());
  j["instances"][0]["warmup"]["metrics"]["ns_per_yield"]["value"] = -3;
  err = load_error(dir, j.dump());
  EXPECT_NE(err.find("/instances/0/warmup/metrics/ns_per_yield/value: a duration cannot be negative"),
            std::string::npos)
      << err;
}

TEST(Model, TruncatedFileIsRefused) {
  TempDir dir;
  std::string text = slurp(write_sample(dir));
  auto err = load_error(dir, text.substr(0, text.size() / 2));
  EXPECT_NE(err.find("bad.json: not valid JSON (truncated?) at byte"), std::string::npos) << err;
  err = load_error(dir, "");
  EXPECT_NE(err.find("bad.json: empty file"), std::string::npos) << err;
}

TEST(Model, WrongTypeIsNamed) {
  TempDir dir;
  auto j = to_json(sample_bundle());
  j["instances"][0]["repetitions"] = "three";
  auto err = load_error(dir, j.dump());
  EXPECT_NE(err.find("/instances/0/repetitions: expected an array, got \"three\""), std::string::npos) << err;
}

TEST(Model, WriteNeverOverwritesAndLeavesNoTemporaries) {
  TempDir dir;
  auto path = write_sample(dir);
  const std::string before = slurp(path);
  auto other = sample_bundle();
  other.label = "second";
  EXPECT_THROW(write_bundle(path, other), InputError);
  EXPECT_EQ(slurp(path), before);
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

// RELIABILITY.md, file modes: the lab's readers (other users, Grafana's, the report's) read bundles.
TEST(Model, ABundleIsReadableByAllWhateverTheUmask) {
  TempDir dir;
  const mode_t old_mask = ::umask(077);
  const auto path = write_sample(dir);
  ::umask(old_mask);
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
}

// RELIABILITY.md, paths: a symlink planted where schedlab writes (by another user of a shared output
// directory) is never followed: refused where a file must not be replaced, replaced itself otherwise.
TEST(AtomicFile, APlantedSymlinkIsNeverFollowed) {
  TempDir dir;
  const auto outside = dir.path() / "outside.txt";
  spit(outside, "precious");
  std::filesystem::create_directories(dir.path() / "out");
  const auto link = dir.path() / "out" / "result.json";
  std::filesystem::create_symlink(outside, link);
  EXPECT_THROW(write_file_atomic(link, "written"), InputError);
  EXPECT_EQ(slurp(outside), "precious");
  write_file_atomic(link, "written", /*replace=*/true);
  EXPECT_EQ(slurp(outside), "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(link));
  EXPECT_EQ(slurp(link), "written");
}

TEST(Model, WriterRefusesWhatItCouldNotReadBack) {
  TempDir dir;
  auto b = sample_bundle();
  b.instances[0].repetitions[0].duration_s = -1;
  EXPECT_THROW(write_bundle(dir.path() / "neg.json", b), BundleError);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "neg.json"));
}

// Two kernel builds of one recipe once unpacked over each other's tree: the second holder is refused,
// with what the first is doing and the lock file in the message, until the first lets go.
TEST(FileLock, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  testing::TempDir dir;
  const auto file = dir.path() / "x.lock";
  {
    FileLock first(file, "building debian-6.12-source");
    try {
      FileLock second(file, "building debian-6.12-source");
      ADD_FAILURE() << "two holders at once";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "another schedlab is building debian-6.12-source (it holds " + file.string() + ")");
    }
  }
  EXPECT_NO_THROW(FileLock again(file, "building debian-6.12-source"));
}

}  // namespace
}  // namespace schedlab
