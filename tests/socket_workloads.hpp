#pragma once
// What the tbench and chat tests share: running a workload through the schedlab binary into a
// bundle, bad input through the CLI, and killing one of a run's processes while it runs.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cli_util.hpp"
#include "core/bundle_io.hpp"
#include "test_util.hpp"

namespace schedlab::testing {

// Runs `schedlab run ARGS` into `out` and loads its one bundle (a failed repetition still
// writes one; exit code 1 then).
inline Bundle run_bundle(const std::filesystem::path& out, const std::string& args, int expected_code = 0) {
  auto o = schedlab("run --settle-timeout 0 --no-counters --out " + out.string() + " " + args);
  EXPECT_EQ(o.code, expected_code) << args << "\n" << o.out;
  auto files = files_in(out);
  if (files.size() != 1) throw std::runtime_error("no bundle from: " + args + "\n" + o.out);
  return load_bundle(files[0]);
}

inline void expect_bad_input(const std::string& args, const std::string& message) {
  TempDir dir;
  auto out = dir.path() / "out";
  auto o = schedlab("run --settle-timeout 0 --out " + out.string() + " " + args);
  EXPECT_EQ(o.code, 2) << args << "\n" << o.out;
  EXPECT_NE(o.out.find(message), std::string::npos) << args << "\n" << o.out;
  EXPECT_TRUE(files_in(out).empty()) << "something was written for: " << args;
}

// The pid of a descendant of this test whose command name (/proc/PID/comm) is `comm`, or -1.
inline pid_t find_process(const std::string& comm) {
  for (const pid_t pid : descendant_pids()) {
    auto text = slurp("/proc/" + std::to_string(pid) + "/comm");
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text == comm && process_alive(pid)) return pid;
  }
  return -1;
}

// Runs `schedlab run ARGS` and SIGKILLs the first process named `victim` it sees; the bundle and
// whether a victim was found.
struct KilledRun {
  Bundle bundle;
  bool killed = false;
  Outcome outcome;
};
inline KilledRun run_and_kill(const std::filesystem::path& out, const std::string& args,
                              const std::string& victim) {
  auto done = std::async(std::launch::async, [&] {
    return schedlab("run --settle-timeout 0 --no-counters --out " + out.string() + " " + args);
  });
  KilledRun r;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!r.killed && std::chrono::steady_clock::now() < give_up &&
         done.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    const pid_t pid = find_process(victim);
    if (pid > 0) r.killed = ::kill(pid, SIGKILL) == 0;
  }
  r.outcome = done.get();
  auto files = files_in(out);
  if (files.size() != 1) throw std::runtime_error("no bundle from: " + args + "\n" + r.outcome.out);
  r.bundle = load_bundle(files[0]);
  return r;
}

}  // namespace schedlab::testing
