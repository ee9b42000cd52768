#pragma once
// The state `schedlab kernel boot debian-6.12 --backend kexec --state-file ATTEMPT/boot-state.json` stages,
// as if staged in the boot before this one: what the lab-boot tests put where a daemon was killed, since a
// test cannot reboot the machine.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace schedlab::testing {

inline constexpr const char* kOtherBoot = "00000000-0000-4000-8000-000000000001";  // not this boot's id

// A 2-repetition yield run of 20,000 yields labelled debian-6.12, its bundle to land in `attempt_dir`,
// expecting kernel `expected_release` after the reboot.
inline nlohmann::json staged_boot_state(const std::filesystem::path& attempt_dir,
                                        const std::string& expected_release) {
  return {{"schema", "schedlab.boot-state/1"},
          {"backend", "kexec"},
          {"recipe", {{"name", "debian-6.12"}, {"label", "6.12-eevdf"}}},
          {"kernel", {{"release", expected_release}}},
          {"run_args",
           {"run", "--workload", "yield", "--param", "yield.yields=20000", "--repetitions", "2",
            "--settle-timeout", "0", "--no-counters", "--label", "debian-6.12"}},
          {"out_dir", attempt_dir.string()},
          {"schedlab", SCHEDLAB_BINARY},
          {"staged_at", "2026-12-01T02:00:00Z"},
          {"boot_id_before", kOtherBoot}};
}

}  // namespace schedlab::testing
