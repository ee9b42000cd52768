// The commits between two git-built kernels at the top of `schedlab diff` (diff/kernel_commits.hpp): a
// real repository made here with git, and the two real qemu sides of tests/fixtures/qemu-6.1-vs-6.12
// as if their kernels had been built from two of its commits (kernel.booted_by as a `git` recipe's boot
// records it: source, commit, repository). Their measurements are left as they are.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "diff/kernel_commits.hpp"
#include "diff/presentation.hpp"
#include "report_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::files_in;
using testing::sh;
using testing::slurp;
using testing::spit;
using testing::TempDir;

const fs::path kQemuSides = fs::path(SCHEDLAB_FIXTURES_DIR) / "qemu-6.1-vs-6.12";

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

// A repository with one commit per subject, in order; the ids, oldest first.
class Repository {
 public:
  explicit Repository(fs::path dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    const auto o = git("init -q");
    if (o.code != 0) throw std::runtime_error("git init: " + o.out);
  }
  std::string commit(const std::string& subject) {
    spit(dir_ / "sched.c", slurp_or_empty() + subject + "\n");
    const auto o = git("add sched.c && " + git_command() + " commit -q -m '" + subject + "'");
    if (o.code != 0) throw std::runtime_error("git commit: " + o.out);
    return head();
  }
  std::string head() { return trimmed(git("rev-parse HEAD").out); }
  testing::Outcome git(const std::string& args) {
    return sh("cd " + quoted(dir_) + " && " + git_command() + " " + args);
  }
  const fs::path& dir() const { return dir_; }

 private:
  static std::string git_command() { return "git -c user.name=schedlab -c user.email=schedlab@example.org"; }
  static std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  std::string slurp_or_empty() { return fs::exists(dir_ / "sched.c") ? slurp(dir_ / "sched.c") : ""; }
  fs::path dir_;
};

class DiffCommits : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sh("git --version").code != 0) GTEST_SKIP() << "git is not on PATH: there is nothing to log";
    repo_ = std::make_unique<Repository>(dir_.path() / "my linux");  // a space: one argument to git
    first_ = repo_->commit("sched: first");
    second_ = repo_->commit("sched: second");
    third_ = repo_->commit("sched/fair: third");
  }

  // A copy of a fixture side whose every bundle's kernel.booted_by is changed by `edit`.
  fs::path side(const std::string& name, const std::string& fixture,
                const std::function<void(nlohmann::json&)>& edit) {
    const auto out = dir_.path() / name;
    fs::create_directories(out);
    for (const auto& f : files_in(kQemuSides / fixture)) {
      auto b = nlohmann::json::parse(slurp(f));
      edit(b["kernel"]["booted_by"]);
      spit(out / f.filename(), b.dump());
    }
    return out;
  }
  fs::path git_side(const std::string& name, const std::string& fixture, const std::string& commit,
                    const fs::path& repository) {
    return side(name, fixture, [&](nlohmann::json& by) {
      by["source"] = "git";
      by["commit"] = commit;
      by["repository"] = repository.string();
    });
  }

  testing::Outcome diff(const std::string& options, const fs::path& base, const fs::path& other) {
    return sh("NO_COLOR=1 " + std::string(SCHEDLAB_BINARY) + " diff " + options + " " + quoted(base) + " " +
              quoted(other));
  }

  TempDir dir_;
  std::unique_ptr<Repository> repo_;
  std::string first_, second_, third_;
};

TEST_F(DiffCommits, TheTextShowsBothCommitsAndTheLogBetweenThemBelowTheVerdicts) {
  const auto base = git_side("base", "6.1-cfs", first_, repo_->dir());
  const auto other = git_side("other", "6.12-eevdf", third_, repo_->dir());
  const auto o = diff("--format text", base, other);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto text = testing::unwrapped(o.out);
  // The sides keep their labels (booted_by.label): 6.1-cfs and 6.12-eevdf.
  const auto header = "kernel commits: 6.12-eevdf " + third_.substr(0, 12) + " against 6.1-cfs " +
                      first_.substr(0, 12) + " in " + repo_->dir().string();
  const auto at = text.find(header);
  ASSERT_NE(at, std::string::npos) << o.out;
  EXPECT_NE(text.find("2 commits in " + first_.substr(0, 12) + ".." + third_.substr(0, 12) + ":"),
            std::string::npos)
      << o.out;
  EXPECT_NE(text.find(third_.substr(0, 12) + " sched/fair: third"), std::string::npos) << o.out;
  EXPECT_NE(text.find(second_.substr(0, 12) + " sched: second"), std::string::npos) << o.out;
  EXPECT_EQ(text.find("sched: first"), std::string::npos) << "the base's own commit is not between them";
  // Near the top: after the verdict table, before the warnings and the details.
  EXPECT_LT(text.find("instance "), at) << o.out;
  EXPECT_LT(at, text.find("WARNING")) << o.out;
  // The commit is a configuration difference too.
  EXPECT_NE(text.find("configuration kernel.commit"), std::string::npos) << o.out;
}

TEST_F(DiffCommits, MarkdownAndJsonCarryTheSameCommits) {
  const auto base = git_side("base", "6.1-cfs", first_, repo_->dir());
  const auto other = git_side("other", "6.12-eevdf", third_, repo_->dir());
  const auto md = diff("--format markdown", base, other);
  ASSERT_EQ(md.code, 0) << md.out;
  EXPECT_NE(md.out.find("Kernel commits: 6.12-eevdf " + third_.substr(0, 12)), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("```\n" + third_.substr(0, 12) + " sched/fair: third\n" + second_.substr(0, 12) +
                        " sched: second\n```"),
            std::string::npos)
      << md.out;

  const auto o = diff("--json", base, other);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["kernel_commits"].size(), 1u) << j["kernel_commits"];
  const auto& k = j["kernel_commits"][0];
  EXPECT_EQ(k["side"], "6.12-eevdf");
  EXPECT_EQ(k["repository"], repo_->dir().string());
  EXPECT_EQ(k["base"]["commit"], first_);
  EXPECT_EQ(k["other"]["commit"], third_);
  EXPECT_TRUE(k["error"].is_null());
  EXPECT_EQ(k["ahead"], 2);
  EXPECT_EQ(k["behind"], 0);
  EXPECT_EQ(k["listed"], "base..other");
  EXPECT_EQ(k["more"], 0);
  ASSERT_EQ(k["log"].size(), 2u);
  EXPECT_EQ(k["log"][0],
            nlohmann::json({{"commit", third_.substr(0, 12)}, {"subject", "sched/fair: third"}}));
  EXPECT_EQ(k["log"][1]["subject"], "sched: second");
  EXPECT_EQ(k["text"]["summary"], "2 commits in " + first_.substr(0, 12) + ".." + third_.substr(0, 12) + ":");
  bool listed = false;
  for (const auto& d : j["environment_differences"])
    listed = listed || (d["field"] == "kernel.commit" && d["category"] == "configuration" &&
                        d["values"]["6.12-eevdf"] == third_);
  EXPECT_TRUE(listed) << j["environment_differences"];
}

// The HTML report draws its commits section (report/web/report.js, below the verdicts) from the diff's
// JSON it carries: the same commits as `diff --json`.
TEST_F(DiffCommits, TheReportCarriesTheDiffsCommits) {
  const auto base = git_side("base", "6.1-cfs", first_, repo_->dir());
  const auto other = git_side("other", "6.12-eevdf", third_, repo_->dir());
  const auto html = dir_.path() / "report.html";
  const auto o = sh(std::string(SCHEDLAB_BINARY) + " report " + quoted(base) + " " + quoted(other) + " -o " +
                    quoted(html));
  ASSERT_EQ(o.code, 0) << o.out;
  const auto data = testing::report_data_of(slurp(html));
  ASSERT_TRUE(data.is_object());
  const auto j = diff("--json", base, other);
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_EQ(data["diff"]["kernel_commits"], nlohmann::json::parse(j.out)["kernel_commits"]);
  EXPECT_EQ(data["diff"]["kernel_commits"][0]["log"][0]["subject"], "sched/fair: third");
}

TEST_F(DiffCommits, ARepositoryNotHereIsSaidAndTheDiffStands) {
  const fs::path gone = "/nonexistent/schedlab/linux";
  const auto base = git_side("base", "6.1-cfs", first_, gone);
  const auto other = git_side("other", "6.12-eevdf", third_, gone);
  const auto o = diff("--format text", base, other);
  ASSERT_EQ(o.code, 0) << o.out;
  const auto text = testing::unwrapped(o.out);
  EXPECT_NE(text.find("kernel commits: 6.12-eevdf " + third_.substr(0, 12)), std::string::npos) << o.out;
  EXPECT_NE(text.find("commits between them: repository " + gone.string() + " not readable here"),
            std::string::npos)
      << o.out;
  const auto j = diff("--json", base, other);
  ASSERT_EQ(j.code, 0) << j.out;
  const auto k = nlohmann::json::parse(j.out)["kernel_commits"].at(0);
  EXPECT_EQ(k["error"], "repository " + gone.string() + " not readable here");
  EXPECT_TRUE(k["ahead"].is_null());
  EXPECT_TRUE(k["log"].empty());
}

TEST_F(DiffCommits, PackageKernelsAndOneGitSideShowNoCommits) {
  // The fixtures as they are: two Debian package kernels (booted_by has recipe, label, accel only).
  auto o = diff("--format text", kQemuSides / "6.1-cfs", kQemuSides / "6.12-eevdf");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out.find("kernel commits"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("kernel.commit"), std::string::npos) << o.out;
  o = diff("--json", kQemuSides / "6.1-cfs", kQemuSides / "6.12-eevdf");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["kernel_commits"], nlohmann::json::array());
  // A git kernel against a package kernel: one commit, nothing to log between.
  o = diff("--format text", kQemuSides / "6.1-cfs", git_side("other", "6.12-eevdf", third_, repo_->dir()));
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out.find("kernel commits:"), std::string::npos) << o.out;
}

TEST_F(DiffCommits, AnImageOrADirtyTreeIsAConfigurationDifference) {
  const std::string sha_a(64, 'a'), sha_b(64, 'b');
  const auto a = side("a", "6.1-cfs", [&](nlohmann::json& by) {
    by["source"] = "image";
    by["image_sha256"] = sha_a;
  });
  const auto b = side("b", "6.12-eevdf", [&](nlohmann::json& by) {
    by["source"] = "image";
    by["image_sha256"] = sha_b;
  });
  auto o = diff("--json", a, b);
  ASSERT_EQ(o.code, 0) << o.out;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_TRUE(j["kernel_commits"].empty());
  auto field = [&](const std::string& name) {
    for (const auto& d : j["environment_differences"])
      if (d["field"] == name) return d;
    return nlohmann::json();
  };
  EXPECT_EQ(field("kernel.image")["category"], "configuration") << j["environment_differences"];
  EXPECT_EQ(field("kernel.image")["values"]["6.12-eevdf"], sha_b);

  // One tree at one commit, built clean and with local changes: the same commit, dirty differs.
  const auto clean = side("clean", "6.1-cfs", [&](nlohmann::json& by) {
    by.update(
        {{"source", "tree"}, {"commit", third_}, {"repository", repo_->dir().string()}, {"dirty", false}});
  });
  const auto dirty = side("dirty", "6.12-eevdf", [&](nlohmann::json& by) {
    by.update(
        {{"source", "tree"}, {"commit", third_}, {"repository", repo_->dir().string()}, {"dirty", true}});
  });
  o = diff("--json", clean, dirty);
  ASSERT_EQ(o.code, 0) << o.out;
  j = nlohmann::json::parse(o.out);
  EXPECT_EQ(field("kernel.dirty")["values"]["6.12-eevdf"], "true") << j["environment_differences"];
  EXPECT_TRUE(field("kernel.commit").is_null()) << "one commit on both sides";
  ASSERT_EQ(j["kernel_commits"].size(), 1u);
  EXPECT_EQ(j["kernel_commits"][0]["other"]["dirty"], true);
  EXPECT_EQ(j["kernel_commits"][0]["text"]["summary"],
            "the same commit: what differs is a dirty tree's changes, which git does not hold");
}

// ---- commits_between on its own: the ways two commits can stand to each other

TEST_F(DiffCommits, AnOlderOtherListsWhatTheBaseHasMore) {
  const auto r = commits_between(repo_->dir(), third_, first_);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.ahead, 0u);
  EXPECT_EQ(r.behind, 2u);
  EXPECT_EQ(r.listed, "other..base");
  ASSERT_EQ(r.log.size(), 2u);
  EXPECT_EQ(r.log[0].subject, "sched/fair: third");
  EXPECT_EQ(
      commits_text({"old", false, false, r}, "new").summary,
      "old is older: new has 2 commits more, " + first_.substr(0, 12) + ".." + third_.substr(0, 12) + ":");
}

TEST_F(DiffCommits, DivergedCommitsCountBothWaysAndListTheOthers) {
  ASSERT_EQ(repo_->git("checkout -q -b topic " + first_).code, 0);
  const auto topic = repo_->commit("topic: only here");
  const auto r = commits_between(repo_->dir(), third_, topic);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.ahead, 1u);
  EXPECT_EQ(r.behind, 2u);
  EXPECT_EQ(r.listed, "base..other");
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_EQ(r.log[0].subject, "topic: only here");
  EXPECT_EQ(commits_text({"topic", false, false, r}, "main").summary,
            "the two diverged: 1 commit only in topic, 2 only in main; " + third_.substr(0, 12) + ".." +
                topic.substr(0, 12) + ":");
}

TEST_F(DiffCommits, TheLogStopsAtTwentyLinesAndCountsTheRest) {
  for (int i = 4; i <= 25; ++i) repo_->commit("sched: commit " + std::to_string(i));
  const auto r = commits_between(repo_->dir(), first_, repo_->head());
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.ahead, 24u);
  ASSERT_EQ(r.log.size(), kCommitLogLines);
  EXPECT_EQ(r.log.front().subject, "sched: commit 25");
  EXPECT_EQ(commits_text({"tip", false, false, r}, "base").more, "... and 4 more");
}

TEST_F(DiffCommits, ACommitThatIsNotInTheRepositoryOrNotAnIdIsSaid) {
  const std::string elsewhere = "0123456789abcdef0123456789abcdef01234567";
  auto r = commits_between(repo_->dir(), first_, elsewhere);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(*r.error, "commit 0123456789ab is not in " + repo_->dir().string() + " (fetch it there)");
  r = commits_between(repo_->dir(), first_, "--output=/tmp/x");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(*r.error, "the bundles' commit ids are not git object ids");
  r = commits_between(dir_.path(), first_, third_);  // a directory, not a repository
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->rfind(dir_.path().string() + " is not a git repository here", 0), 0u) << *r.error;
}

}  // namespace
}  // namespace schedlab
