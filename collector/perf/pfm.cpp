#include "collector/perf/pfm.hpp"

#include <perfmon/pfmlib_perf_event.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.hpp"

namespace schedlab {
namespace {

void ensure_initialized() {
  static std::once_flag once;
  static int rc = PFM_SUCCESS;
  std::call_once(once, [] { rc = pfm_initialize(); });
  if (rc != PFM_SUCCESS) throw Error(std::string("libpfm4 initialisation failed: ") + pfm_strerror(rc));
}

int errno_for_pfm(int rc) {
  switch (rc) {
    case PFM_ERR_NOTFOUND:
      return ENOENT;
    case PFM_ERR_NOTSUPP:
      return EOPNOTSUPP;
    case PFM_ERR_NOMEM:
      return ENOMEM;
    default:
      return EINVAL;
  }
}

}  // namespace

std::vector<std::string> default_events() {
  return {"cycles:u",
          "cycles:k",
          "instructions:u",
          "instructions:k",
          "perf::CONTEXT-SWITCHES",
          "perf::CPU-MIGRATIONS",
          "perf::TASK-CLOCK",
          "perf::PAGE-FAULTS"};
}

EncodedEvent encode_event(const std::string& name) {
  ensure_initialized();
  EncodedEvent ev;
  ev.name = name;
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &ev.attr;
  arg.size = sizeof arg;
  char* fstr = nullptr;
  arg.fstr = &fstr;
  int rc = pfm_get_os_event_encoding(name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (fstr) {
    ev.canonical = fstr;
    std::free(fstr);
  }
  if (rc != PFM_SUCCESS) {
    ev.unknown = rc == PFM_ERR_NOTFOUND;
    ev.rejected = rc != PFM_ERR_NOMEM;  // out of memory says nothing about the name
    ev.error_number = errno_for_pfm(rc);
    ev.reason = std::string("libpfm4 cannot encode '") + name + "': " + pfm_strerror(rc);
    return ev;
  }
  ev.encoded = true;
  ev.attr.size = sizeof(perf_event_attr);
  return ev;
}

namespace {

// Calls `visit` for every PMU libpfm4 detects on this machine.
template <typename Visit>
void for_each_present_pmu(Visit visit) {
  ensure_initialized();
  for (int p = PFM_PMU_NONE; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t info;
    std::memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_pmu_info(static_cast<pfm_pmu_t>(p), &info) == PFM_SUCCESS && info.is_present) visit(info);
  }
}

}  // namespace

std::vector<PmuInfo> present_pmus() {
  std::vector<PmuInfo> out;
  for_each_present_pmu([&](const pfm_pmu_info_t& info) {
    out.push_back({info.name, info.desc ? info.desc : "", info.nevents});
  });
  return out;
}

std::vector<std::string> pmu_event_names(const std::string& pmu) {
  std::vector<std::string> out;
  for_each_present_pmu([&](const pfm_pmu_info_t& info) {
    if (pmu != info.name) return;
    for (int e = info.first_event; e != -1; e = pfm_get_event_next(e)) {
      pfm_event_info_t ei;
      std::memset(&ei, 0, sizeof ei);
      ei.size = sizeof ei;
      if (pfm_get_event_info(e, PFM_OS_NONE, &ei) == PFM_SUCCESS) out.push_back(pmu + "::" + ei.name);
    }
  });
  return out;
}

}  // namespace schedlab
