#pragma once
// The guest's /init (busybox sh) and the files it reads; the markers it prints on the serial
// console are what the qemu backend watches for.
#include <string>
#include <vector>

#include "kernels/boot_backend.hpp"

namespace schedlab::kernels {

// Console markers, one per line.
inline constexpr const char* kMarkInit = "SCHEDLAB-INIT";    // /init started: "SCHEDLAB-INIT uptime 2.41"
inline constexpr const char* kMarkStart = "SCHEDLAB-START";  // the suite is about to run
inline constexpr const char* kMarkDone = "SCHEDLAB-DONE";    // "SCHEDLAB-DONE rc=0 bundles=1"
inline constexpr const char* kMarkKexec = "SCHEDLAB-KEXEC";  // jumping into the next kernel
inline constexpr const char* kMarkFatal = "SCHEDLAB-FATAL";  // init gave up: "SCHEDLAB-FATAL mount hostroot"

std::string guest_init_script();

// /etc/schedlab/boot.conf: shell assignments /init sources (root mode, cache, suite directory).
std::string guest_boot_conf(const BootRequest& request);

// /etc/schedlab/run.sh: runs schedlab with the run arguments inside the chroot, bundles to
// /run/schedlab-out. InputError for run arguments that cannot work in the guest (--out).
std::string guest_run_script(const BootRequest& request);

// /etc/schedlab/next.sh: sourced by /init after a run; kexec into `next` (its kernel, initramfs at
// `next_initrd` and command line `next_append`, all host paths seen through the 9p root).
std::string guest_kexec_script(const BootRequest& next, const std::filesystem::path& next_initrd,
                               const std::string& next_append);

// /etc/schedlab/sched: "features NAME" and "tunable NAME VALUE" lines applied before the run.
std::string guest_sched_settings(const Recipe& recipe);

}  // namespace schedlab::kernels
