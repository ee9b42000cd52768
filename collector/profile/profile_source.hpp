#pragma once
// The sampled kernel profile: perf_event_open sampling on every CPU (the workload's cgroup or
// process tree, or the whole system), drained from the mmap rings, kernel IPs symbolised
// against /proc/kallsyms after the repetition. The result is a per-symbol histogram in
// Repetition::profile; user-mode samples count as "[user]".
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/perf/perf_source.hpp"
#include "collector/perf/ring_set.hpp"
#include "collector/source.hpp"

namespace schedlab {

enum class ProfileScope { kWorkload, kSystem };
ProfileScope parse_profile_scope(const std::string& text);  // workload | system

struct ProfileOptions {
  std::string event = "cpu-clock";  // any libpfm4 name; cpu-clock is the one every machine has
  int frequency_hz = 1000;
  ProfileScope scope = ProfileScope::kWorkload;
  std::filesystem::path kallsyms = "/proc/kallsyms";
  std::size_t ring_pages = 256;  // per CPU: 1 MiB holds ~40 s of 1 kHz samples between drains
};

// "cpu-clock" and "task-clock" are perf tool spellings libpfm4 knows as perf::CPU-CLOCK etc.
std::string libpfm_event_name(const std::string& event);

class ProfileSource : public Source {
 public:
  explicit ProfileSource(ProfileOptions options, PerfOpener opener = system_perf_opener());
  ~ProfileSource() override;
  ProfileSource(const ProfileSource&) = delete;
  ProfileSource& operator=(const ProfileSource&) = delete;

  std::string name() const override { return "profile"; }
  void attach(const AttachTarget& target) override;
  void enable() override;
  void collect(Repetition& rep) override;

 private:
  struct Tally {
    std::unordered_map<std::uint64_t, std::uint64_t> kernel_ips;
    std::uint64_t user = 0, other = 0, lost = 0, lost_records = 0, throttles = 0;
  };
  void open_all(const AttachTarget& target);
  void count(const perf_event_header& h, const unsigned char* payload, std::size_t size);
  nlohmann::json histogram() const;

  ProfileOptions options_;
  PerfOpener opener_;
  RingSet rings_;
  std::string scope_name_;
  nlohmann::json sampling_ = nlohmann::json::object();
  int open_errno_ = 0;
  std::string open_reason_;
  Tally tally_;
};

}  // namespace schedlab
