#pragma once
// Kernel tracepoints as perf sees them: tracefs's events/GROUP/NAME/{id,format}. The format file
// gives each field's offset and size in the raw sample, which differ between kernel versions.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/host_paths.hpp"

namespace schedlab {

struct TracepointField {
  std::size_t offset = 0;
  std::size_t size = 0;
  bool is_signed = false;
};

struct TracepointFormat {
  std::string name;  // "sched/sched_switch"
  std::uint32_t id = 0;
  std::map<std::string, TracepointField> fields;

  // Throws InputError naming the tracepoint when the kernel's format lacks the field.
  const TracepointField& field(const std::string& field_name) const;
};

// Parses a format file's text; `source` names it in errors (InputError with the line).
TracepointFormat parse_tracepoint_format(const std::string& text, const std::string& source);

// tracefs: /sys/kernel/tracing, or the debugfs path older systems use; mounted (as perf does) when
// neither is and we are root. Throws Error saying what to do when none is usable; `note` tells
// whether we mounted it.
std::filesystem::path find_tracefs(const HostPaths& paths, std::string& note);

TracepointFormat read_tracepoint(const std::filesystem::path& tracefs, const std::string& group_and_name);

}  // namespace schedlab
