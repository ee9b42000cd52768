#pragma once
// How a recipe's kernel gets booted and the suite run under it. One interface, three backends:
//   qemu  — an SMP guest (TCG here, KVM where there is one) running the host's userland over a
//           read-only 9p share (or an ext4 image), bundles brought back over a 9p output share;
//   kexec — a lab box jumps straight into the kernel (kexec -l, sync, kexec -e);
//   grub  — a lab box reboots once into the kernel (grub-reboot), falling back to the default entry.
// The lab backends reboot the machine, so the run happens after the reboot: they write a boot state
// file that `schedlab kernel resume` (run at boot) reads to run the suite or record `boot-failed`.
#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/package_cache.hpp"
#include "kernels/recipe.hpp"

namespace schedlab::kernels {

enum class RootMode { k9p, kImage };

struct QemuTopology {
  int sockets = 1, cores = 1, threads = 1;
  int cpus() const { return sockets * cores * threads; }
};
// "sockets=2,cores=2,threads=2" -> topology; InputError on anything else.
QemuTopology parse_topology(const std::string& text);

struct BootRequest {
  Recipe recipe;
  KernelArtifacts kernel;
  std::vector<std::string> run_args;  // the schedlab command line for the booted kernel: run --workload ...
  std::filesystem::path out_dir;      // bundles, console log and the boot record land here
  std::filesystem::path schedlab_binary;  // this binary (/proc/self/exe)
  std::filesystem::path work_dir;         // scratch for initramfs and images (a cache directory)
  std::string append;                     // extra kernel arguments
  bool dry_run = false;                   // print the commands, run and write nothing
  // qemu
  int smp = 2;
  int memory_mib = 2048;
  std::optional<QemuTopology> topology;
  int numa_nodes = 0;
  std::string cpu_model;      // empty: qemu64, or Nehalem when the topology has SMT threads
  std::string accel = "tcg";  // tcg | kvm
  // TCG's vCPU threads: "single" (one host thread runs every vCPU in turn) or "multi" (a host thread per
  // vCPU). Single by default: under multi-threaded TCG a vCPU can run a stale translation of kernel text
  // another vCPU has just re-patched (a static key flipped by text_poke_bp), and the guest dies of an
  // "Oops: int3" (kernels/README.md has the counts and the boot-time cost).
  std::string tcg_thread = "single";
  RootMode root = RootMode::k9p;
  std::chrono::seconds timeout{900};       // qemu start to the guest's end
  std::chrono::seconds boot_timeout{120};  // qemu start to the guest's /init (a kernel that hangs early)
  // qemu: after the run, kexec into this recipe's kernel and run again (one guest lifetime, two
  // kernels; the kexec path of a lab box, tested under qemu). 9p root only.
  std::optional<Recipe> then_recipe;
  KernelArtifacts then_kernel;
  // The next kernel's bundles' --label (the run arguments' --label names the first kernel's only);
  // empty: the then recipe's label.
  std::string then_label;
  // After the last SCHEDLAB-DONE the guest powers off; one that hangs instead is killed after this.
  std::chrono::seconds poweroff_grace{30};
  // lab backends
  std::filesystem::path state_file = "/var/lib/schedlab/boot-state.json";
};

struct BootResult {
  std::string status;  // ok | failed | timeout | boot-failed | dry-run | staged
  std::string reason;  // empty when ok
  std::string note;    // something an ok boot did not do as it should (qemu: killed after DONE)
  std::vector<std::string> commands;  // what ran (or would run, for a dry run)
  std::vector<std::filesystem::path> bundles;
  std::filesystem::path record;  // the boot record JSON (qemu) or the state file (lab)
  std::string console_tail;
  std::optional<double> init_s, suite_start_s, first_output_s, total_s;  // host seconds since launch
  std::optional<int> guest_rc;                                           // the worst of the runs' exit codes
  int runs_done = 0;              // SCHEDLAB-DONE markers seen (2 with then_recipe)
  std::optional<double> kexec_s;  // host seconds at SCHEDLAB-KEXEC
};

class BootBackend {
 public:
  virtual ~BootBackend() = default;
  virtual std::string name() const = 0;
  // Boots (or stages the boot of) the request's kernel. Progress lines go to `log`.
  virtual BootResult boot(const BootRequest& request, std::ostream& log) = 0;
};

std::unique_ptr<BootBackend> make_qemu_backend();
std::unique_ptr<BootBackend> make_kexec_backend();
std::unique_ptr<BootBackend> make_grub_backend();
// "qemu", "kexec" or "grub"; InputError naming the known ones otherwise.
std::unique_ptr<BootBackend> make_backend(const std::string& name);

// The kernel arguments every backend adds so a bundle can name the recipe it was booted by.
std::string identity_args(const Recipe& recipe);
// With where a user's kernel came from (KernelArtifacts::identity): schedlab.source=git
// schedlab.commit=ID schedlab.repo=PATH ..., each value one encoded word (core/cmdline_word.hpp).
std::string identity_args(const Recipe& recipe, const KernelArtifacts& kernel);

}  // namespace schedlab::kernels
