#include "bpf_scheduler.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "loader_error.hpp"

namespace schedlab::scx {
namespace {

// The map scx_common.bpf.h puts struct schedlab_exit_info in (a section of its own, so offset 0).
constexpr const char* kExitInfoMap = ".data.schedlab_exit";

std::string errno_text(int err) {
  char buffer[128];
  libbpf_strerror(err, buffer, sizeof(buffer));
  return std::string(buffer) + " (errno " + std::to_string(err) + ")";
}

bool is_sched_ext_ops(const bpf_object* object, const bpf_map* map) {
  if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS) return false;
  const btf* types = bpf_object__btf(object);
  const btf_type* type = types ? btf__type_by_id(types, bpf_map__btf_value_type_id(map)) : nullptr;
  return type && std::strcmp(btf__name_by_offset(types, type->name_off), "sched_ext_ops") == 0;
}

}  // namespace

BpfScheduler::BpfScheduler(const std::filesystem::path& object) : path_(object) {
  object_ = bpf_object__open_file(object.c_str(), nullptr);
  if (!object_) {
    const int err = errno;
    throw LoaderError(ExitCode::refused, "refused",
                      object.string() + ": not a BPF object libbpf can open: " + errno_text(err), err);
  }
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, object_) {
    if (is_sched_ext_ops(object_, map)) {
      ops_map_ = map;
      break;
    }
  }
  if (!ops_map_) {
    bpf_object__close(object_);
    throw LoaderError(
        ExitCode::refused, "refused",
        object.string() + ": no struct_ops map of type sched_ext_ops: not a sched_ext scheduler");
  }
  exit_map_ = bpf_object__find_map_by_name(object_, kExitInfoMap);
  if (exit_map_ && bpf_map__value_size(exit_map_) != sizeof(schedlab_exit_info)) exit_map_ = nullptr;
}

BpfScheduler::~BpfScheduler() {
  detach();
  bpf_object__close(object_);
}

void BpfScheduler::load() {
  if (const int rc = bpf_object__load(object_); rc != 0) {
    // libbpf has printed why (not root, the verifier's log, a kernel whose BTF has no sched_ext_ops).
    throw LoaderError(ExitCode::failed, "load",
                      path_.string() + ": load failed (libbpf's log above says why): " + errno_text(-rc),
                      -rc);
  }
}

void BpfScheduler::attach() {
  link_ = bpf_map__attach_struct_ops(ops_map_);
  if (!link_) {
    const int err = errno;
    throw LoaderError(ExitCode::failed, "attach", path_.string() + ": attach failed: " + errno_text(err),
                      err);
  }
}

void BpfScheduler::detach() {
  if (link_) bpf_link__destroy(link_);
  link_ = nullptr;
}

std::string BpfScheduler::ops_name() const {
  // The map's initial value is the struct as the object lays it out; find .name through its BTF.
  const btf* types = bpf_object__btf(object_);
  const btf_type* type = btf__type_by_id(types, bpf_map__btf_value_type_id(ops_map_));
  std::size_t size = 0;
  const auto* data = static_cast<const char*>(bpf_map__initial_value(ops_map_, &size));
  if (!type || !data || !btf_is_struct(type)) return "";
  const btf_member* member = btf_members(type);
  for (unsigned short i = 0; i < btf_vlen(type); ++i, ++member) {
    if (std::strcmp(btf__name_by_offset(types, member->name_off), "name") != 0) continue;
    const std::size_t offset = member->offset / 8;
    const btf_type* name_type = btf__type_by_id(types, member->type);
    const std::size_t length = name_type && btf_is_array(name_type) ? btf_array(name_type)->nelems : 0;
    if (offset + length > size) return "";
    return std::string(data + offset, strnlen(data + offset, length));
  }
  return "";
}

std::optional<schedlab_exit_info> BpfScheduler::exit_info() const {
  if (!exit_map_) return std::nullopt;
  std::size_t size = 0;
  // After load this is the map's mmap'd memory, which the BPF program writes.
  const auto* shared = static_cast<const schedlab_exit_info*>(bpf_map__initial_value(exit_map_, &size));
  if (!shared || size < sizeof(schedlab_exit_info)) return std::nullopt;
  schedlab_exit_info copy{};
  // kind is written last on the BPF side; acquire it first, then the rest is complete.
  copy.kind = __atomic_load_n(&shared->kind, __ATOMIC_ACQUIRE);
  copy.exit_code = shared->exit_code;
  std::memcpy(copy.reason, shared->reason, sizeof(copy.reason));
  std::memcpy(copy.msg, shared->msg, sizeof(copy.msg));
  copy.reason[sizeof(copy.reason) - 1] = '\0';
  copy.msg[sizeof(copy.msg) - 1] = '\0';
  return copy;
}

std::string exit_kind_name(int kind) {
  switch (kind) {
    case 0:
      return "NONE";
    case 1:
      return "DONE";
    case 64:
      return "UNREG";
    case 65:
      return "UNREG_BPF";
    case 66:
      return "UNREG_KERN";
    case 67:
      return "SYSRQ";
    case 1024:
      return "ERROR";
    case 1025:
      return "ERROR_BPF";
    case 1026:
      return "ERROR_STALL";
    default:
      return "UNKNOWN";
  }
}

}  // namespace schedlab::scx
