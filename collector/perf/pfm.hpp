#pragma once
// Event names to perf_event_attr through libpfm4 (pfm_get_os_event_encoding), so that names
// such as `cycles:u`, `instructions:k` or `perf::CONTEXT-SWITCHES` and raw PMU syntax work.
#include <linux/perf_event.h>

#include <string>
#include <vector>

namespace schedlab {

struct EncodedEvent {
  std::string name;  // as given
  bool encoded = false;
  bool unknown = false;  // libpfm4 knows no such event (a typo)
  // libpfm4 refused the name: unknown, or a modifier or attribute it rejects (`cycles:x`). Where the
  // name is the user's (`--event`, a campaign's events), that is bad input, not "unsupported".
  bool rejected = false;
  perf_event_attr attr{};
  std::string canonical;  // libpfm4's fully qualified form
  int error_number = 0;   // errno-style code for a failed encoding
  std::string reason;
};

// Encodes with kernel and user level unless the name says otherwise (:u / :k): a software
// switch event counted at user level only silently reads 0.
EncodedEvent encode_event(const std::string& name);

struct PmuInfo {
  std::string name;
  std::string description;
  int events = 0;
};
std::vector<PmuInfo> present_pmus();
std::vector<std::string> pmu_event_names(const std::string& pmu);  // "pmu::event" for each event

std::vector<std::string> default_events();

}  // namespace schedlab

namespace schedlab {

// Whether an event encodes and whether the kernel opens it here (for `schedlab events`).
struct EventProbe {
  EncodedEvent encoded;
  bool opens = false;
  int error_number = 0;
  std::string reason;
};
EventProbe probe_event(const std::string& name);

}  // namespace schedlab
