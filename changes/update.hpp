#pragma once
// The change points of a store brought up to date: each one found gets the status stored for it (the same
// change found one or two runs off counts as the same), a new one is recorded `suspected`, and with
// confirmation on, every suspected one is planned for a rerun: unconfirmable with its reason, or rerun
// and decided by the experiment's verdict. `schedlab changes --confirm` and the daemon after each run
// both come here.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "changes/confirmation.hpp"
#include "changes/series_changes.hpp"
#include "daemon/store/store.hpp"

namespace schedlab {

struct ChangeUpdate {
  bool confirm = false;
  RerunOptions rerun;
  std::filesystem::path rerun_root;  // each rerun's experiment under rerun_root/<its name>/
  std::string running_release;       // this boot's kernel release (uname)
  std::string running_host;          // this machine's hostname, as bundles record it
  // Runs `schedlab ARGS...` with its output to `log`; returns its exit code (-1: killed, or stopped).
  std::function<int(const std::vector<std::string>& args, const std::filesystem::path& log)> run;
  std::function<void(const std::string&)> say;  // progress lines (may be empty)
  // Called once per change whose status this update set or changed (may be empty).
  std::function<void(const ChangeRecord&)> decided;
  std::function<bool()> stop_requested;  // checked between reruns (may be empty)
};

// The change's record, with `status` and `reason`; configuration: the label of the first run after.
ChangeRecord to_record(const SeriesChange& change, const std::string& status, const std::string& reason);

// The record stored for `change` (same series and direction, `at` among change.nearby), if any.
const ChangeRecord* stored_record(const SeriesChange& change, const std::vector<ChangeRecord>& stored);

// One record per change of `found`, in its order, each as stored after this update.
std::vector<ChangeRecord> update_changes(Store& store, const ChangeSearch& found, const ChangeUpdate& how);

// The directory name of a change's rerun: its series and time, in characters safe in a path.
std::string rerun_name(const SeriesChange& change);

// uname's release of the running kernel.
std::string running_kernel_release();
// /proc/sys/kernel/hostname, as sysinfo records it in every bundle.
std::string running_hostname();

}  // namespace schedlab
