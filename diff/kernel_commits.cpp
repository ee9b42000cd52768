#include "diff/kernel_commits.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <exception>
#include <sstream>

#include <fmt/format.h>

#include "kernels/process.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;

// A large repository's rev-list over years of history takes seconds; a hung git must not hang the diff.
constexpr std::chrono::seconds kGitTimeout{60};

// Bundles come from anywhere: an id that is not hex could be taken by git as an option.
bool is_object_id(const std::string& s) {
  return (s.size() == 40 || s.size() == 64) && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// git's "fatal: ..." line (dubious ownership prints advice after it), else its last line.
std::string what_git_said(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("fatal: ", 0) == 0 || line.rfind("error: ", 0) == 0) return line;
  return kernels::last_lines(output, 1);
}

struct Git {
  fs::path repository;
  std::optional<std::string> error;

  // The output of `git -C repository args...`, or nullopt with `error` set to git's last line.
  std::optional<std::string> run(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", repository.string()});
    kernels::ProcessOptions options;
    options.timeout = kGitTimeout;
    kernels::ProcessResult r;
    try {
      r = kernels::run_process(args, options);
    } catch (const std::exception& e) {  // git is not installed, or no pipe or process to run it
      error = fmt::format("git could not be run here ({})", e.what());
      return std::nullopt;
    }
    if (r.exit_code == 0 && !r.timed_out) return r.output;
    const auto why =
        r.timed_out ? fmt::format("timed out after {}s", kGitTimeout.count()) : what_git_said(r.output);
    error = fmt::format("`{}` failed: {}", kernels::command_line(args), why);
    return std::nullopt;
  }

  std::optional<std::size_t> count(const std::string& range) {
    auto out = run({"rev-list", "--count", range});
    if (!out) return std::nullopt;
    const auto text = kernels::last_lines(*out, 1);
    std::size_t n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || p != text.data() + text.size()) {
      error = fmt::format("`git rev-list --count {}` in {} printed '{}', not a count", range,
                          repository.string(), text);
      return std::nullopt;
    }
    return n;
  }
};

std::string short_id(const std::string& id) {
  return id.substr(0, 12);
}

}  // namespace

CommitRange commits_between(const fs::path& repository, const std::string& base_commit,
                            const std::string& other_commit) {
  CommitRange r{repository.string(), base_commit, other_commit, std::nullopt, 0, 0, "base..other", {}};
  if (!is_object_id(base_commit) || !is_object_id(other_commit)) {
    r.error = "the bundles' commit ids are not git object ids";
    return r;
  }
  std::error_code ec;
  if (!fs::is_directory(repository, ec) || ::access(repository.c_str(), R_OK | X_OK) != 0) {
    r.error = "repository " + repository.string() + " not readable here";
    return r;
  }
  Git git{repository, std::nullopt};
  if (!git.run({"rev-parse", "--git-dir"})) {
    r.error = repository.string() + " is not a git repository here (" + *git.error + ")";
    return r;
  }
  // Named before counting: a commit built elsewhere and never fetched here is the likely failure.
  for (const auto* id : {&base_commit, &other_commit})
    if (!git.run({"cat-file", "-e", *id + "^{commit}"})) {
      r.error = "commit " + short_id(*id) + " is not in " + repository.string() + " (fetch it there)";
      return r;
    }
  const auto ahead = git.count(base_commit + ".." + other_commit);
  const auto behind = ahead ? git.count(other_commit + ".." + base_commit) : std::nullopt;
  if (!ahead || !behind) {
    r.error = git.error;
    return r;
  }
  r.ahead = *ahead;
  r.behind = *behind;
  if (r.ahead == 0 && r.behind > 0) r.listed = "other..base";
  if (r.listed_count() == 0) return r;
  const auto range =
      r.listed == "base..other" ? base_commit + ".." + other_commit : other_commit + ".." + base_commit;
  // --oneline spelled out: a user's format.pretty or log.showSignature must not change the lines.
  auto out = git.run({"log", "--no-decorate", "--no-show-signature", "--abbrev=12", "--format=%h %s", "-n",
                      std::to_string(kCommitLogLines), range});
  if (!out) {
    r.error = git.error;
    return r;
  }
  std::istringstream lines(*out);
  for (std::string line; std::getline(lines, line);) {
    const auto space = line.find(' ');
    if (line.empty()) continue;
    r.log.push_back({line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1)});
  }
  return r;
}

std::optional<GitKernel> git_kernel(const Side& side) {
  std::optional<GitKernel> out;
  for (const auto& b : side.bundles) {
    const auto& k = b.bundle.kernel;
    if (!k.is_object() || !k.contains("booted_by") || !k["booted_by"].is_object()) return std::nullopt;
    const auto& by = k["booted_by"];
    if (!by.contains("commit") || !by["commit"].is_string() || !by.contains("repository") ||
        !by["repository"].is_string())
      return std::nullopt;
    GitKernel g{by["commit"].get<std::string>(), by["repository"].get<std::string>(),
                by.contains("dirty") && by["dirty"] == true};
    if (!out) {
      out = g;
      continue;
    }
    // A side of several commits (or repositories) has no one place in the history.
    if (g.commit != out->commit || g.repository != out->repository) return std::nullopt;
    out->dirty = out->dirty || g.dirty;
  }
  return out;
}

std::vector<KernelCommits> kernel_commits(const std::vector<Side>& sides) {
  std::vector<KernelCommits> out;
  if (sides.empty()) return out;
  const auto base = git_kernel(sides.front());
  if (!base) return out;
  for (std::size_t i = 1; i < sides.size(); ++i) {
    const auto other = git_kernel(sides[i]);
    if (!other || other->repository != base->repository) continue;
    out.push_back({sides[i].name, base->dirty, other->dirty,
                   commits_between(base->repository, base->commit, other->commit)});
  }
  return out;
}

}  // namespace schedlab
