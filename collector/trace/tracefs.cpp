#include "collector/trace/tracefs.hpp"

#include <sys/mount.h>

#include <cerrno>
#include <regex>

#include "collector/sysstats/proc_text.hpp"
#include "core/error.hpp"

namespace schedlab {

const TracepointField& TracepointFormat::field(const std::string& field_name) const {
  auto it = fields.find(field_name);
  if (it == fields.end())
    throw InputError("tracepoint " + name + " has no field '" + field_name + "' on this kernel");
  return it->second;
}

TracepointFormat parse_tracepoint_format(const std::string& text, const std::string& source) {
  TracepointFormat f;
  // "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;" or "field:char prev_comm[16];..."
  static const std::regex field_line(R"(field:([^;]*);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d);)");
  static const std::regex declaration(R"(([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$)");
  std::size_t line_no = 0, start = 0;
  bool have_id = false;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.rfind("name: ", 0) == 0) f.name = line.substr(6);
    if (line.rfind("ID: ", 0) == 0) {
      std::uint64_t id = 0;
      if (!parse_count(trim(line.substr(4)), id)) malformed_line(source, line_no, "ID is not a number");
      f.id = static_cast<std::uint32_t>(id);
      have_id = true;
    }
    if (line.find("field:") == std::string::npos) continue;
    std::smatch m, name;
    const std::string expected = "expected 'field:TYPE NAME; offset:N; size:N; signed:N;'";
    if (!std::regex_search(line, m, field_line)) malformed_line(source, line_no, expected);
    const std::string decl = m[1].str();
    if (!std::regex_search(decl, name, declaration)) malformed_line(source, line_no, expected);
    // A tracepoint's record fits a page (the kernel's own limit); bounding offset and size here keeps
    // the readers' `offset + size > raw_size` check free of overflow.
    constexpr std::uint64_t kMaxRecordBytes = 65536;
    std::uint64_t offset = 0, size = 0;
    if (!parse_count(m[2].str(), offset) || !parse_count(m[3].str(), size) || offset > kMaxRecordBytes ||
        size > kMaxRecordBytes)
      malformed_line(
          source, line_no,
          "offset or size beyond a tracepoint record's " + std::to_string(kMaxRecordBytes) + " bytes");
    f.fields[name[1].str()] = {offset, size, m[4].str() == "1"};
  }
  if (!have_id) throw InputError(source + ": no 'ID:' line");
  return f;
}

std::filesystem::path find_tracefs(const HostPaths& paths, std::string& note) {
  for (const auto& candidate : {paths.sys / "kernel/tracing", paths.sys / "kernel/debug/tracing"}) {
    if (std::filesystem::exists(candidate / "events/sched")) return candidate;
  }
  const auto mount_point = paths.sys / "kernel/tracing";
  if (paths.sys == "/sys" && std::filesystem::is_directory(mount_point) &&
      ::mount("nodev", mount_point.c_str(), "tracefs", 0, nullptr) == 0 &&
      std::filesystem::exists(mount_point / "events/sched")) {
    note = "mounted tracefs at " + mount_point.string() + " (left mounted, as perf does)";
    return mount_point;
  }
  throw Error(
      "no tracefs with events/sched (mount -t tracefs nodev /sys/kernel/tracing as root; the kernel "
      "needs CONFIG_FTRACE and tracepoints): " +
      errno_text(errno));
}

TracepointFormat read_tracepoint(const std::filesystem::path& tracefs, const std::string& group_and_name) {
  const auto path = tracefs / "events" / group_and_name / "format";
  auto text = read_text(path);
  if (!text) throw Error("cannot read " + path.string() + " (tracefs needs root)");
  auto f = parse_tracepoint_format(*text, path.string());
  f.name = group_and_name;
  return f;
}

}  // namespace schedlab
