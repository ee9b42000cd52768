#pragma once
// One sched_ext scheduler object: opened (ELF parsed, no kernel involved), loaded (verified), attached
// through a struct_ops link. Owns the bpf_object and the link; destroying the link detaches.
#include <filesystem>
#include <optional>
#include <string>

#include "exit_info.h"

struct bpf_object;
struct bpf_map;
struct bpf_link;

namespace schedlab::scx {

class BpfScheduler {
 public:
  // Throws LoaderError(refused) when OBJECT is no BPF object or has no sched_ext_ops struct_ops map.
  explicit BpfScheduler(const std::filesystem::path& object);
  ~BpfScheduler();
  BpfScheduler(const BpfScheduler&) = delete;
  BpfScheduler& operator=(const BpfScheduler&) = delete;

  void load();    // throws LoaderError(failed, "load") with libbpf's errno: not root, verifier, kfuncs
  void attach();  // throws LoaderError(failed, "attach"): e.g. EBUSY when another scheduler won the race
  void detach();  // idempotent
  bool attached() const { return link_ != nullptr; }

  // The ops' .name as compiled into the object (struct sched_ext_ops.name): what DIR/root/ops shows.
  std::string ops_name() const;

  // What the scheduler's ops.exit recorded; kind 0 while it runs. nullopt before load.
  std::optional<schedlab_exit_info> exit_info() const;

 private:
  std::filesystem::path path_;
  bpf_object* object_ = nullptr;
  bpf_map* ops_map_ = nullptr;
  bpf_map* exit_map_ = nullptr;
  bpf_link* link_ = nullptr;
};

// "ERROR_STALL" for SCX_EXIT_ERROR_STALL (enum scx_exit_kind, 6.12), "UNKNOWN" otherwise.
std::string exit_kind_name(int kind);

}  // namespace schedlab::scx
