#include "kernels/console.hpp"

#include <regex>

#include "core/host_paths.hpp"

namespace schedlab::kernels {
namespace {

// Lines that end a boot: the guest will not recover from them.
struct Ending {
  const char* needle;
  const char* meaning;
};
constexpr Ending kEndings[] = {
    {"Kernel panic - not syncing", "kernel panic"},
    {"SCHEDLAB-FATAL", "the guest's /init gave up"},
    {"-- System halted", "the kernel image did not decompress (corrupted?)"},
    {"No working init found", "kernel panic: no init"},
};

// The first sign of a kernel in trouble: "BUG: kernel NULL pointer dereference", "kernel BUG at
// mm/slub.c:42!", and die()'s header, "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" from 6.12 on and
// "int3: 0000 [#1] PREEMPT SMP NOPTI" before (the "[#1]" is the die counter).
const std::regex& oops_pattern() {
  static const std::regex pattern(R"(Oops: |BUG: |kernel BUG at |: [0-9a-f]{4} \[#[0-9]+\])");
  return pattern;
}

// A console line can carry a progress line the run printed without a line end before the kernel's
// message: the kernel's part starts at its "[   41.023417]" stamp.
std::string kernel_part(const std::string& line, std::size_t found_at) {
  static const std::regex stamp(R"(\[ *[0-9]+\.[0-9]+\])");
  std::size_t start = 0;
  const auto end = line.begin() + static_cast<std::ptrdiff_t>(found_at);
  for (std::sregex_iterator it(line.begin(), end, stamp), last; it != last; ++it)
    start = static_cast<std::size_t>(it->position());
  return trim(line.substr(start));
}

}  // namespace

std::string normalise_console(const std::string& raw) {
  static const std::regex escape("\x1b(\\[[0-9;?]*[A-Za-z]|[A-Za-z])");
  const std::string text = std::regex_replace(raw, escape, "");
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      out += text[i];
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && text[j] == '\r') ++j;
    const bool line_end = j < text.size() && text[j] == '\n';  // "\r\n" and "\r\r\n" are one line end
    // A lone "\r" at the start of a line (a progress line clearing itself) moves nothing.
    if (line_end || (!out.empty() && out.back() != '\n')) out += '\n';
    i = line_end ? j : j - 1;
  }
  // A kernel message printed while a progress line was pending starts mid-line: give it its own.
  static const std::regex glued_stamp(R"(([^\n])(\[ *[0-9]+\.[0-9]{6}\] ))");
  return std::regex_replace(out, glued_stamp, "$1\n$2");
}

bool ConsoleWatcher::feed(const std::string& line) {
  if (failure_) return true;
  std::smatch m;
  if (!first_oops_ && std::regex_search(line, m, oops_pattern()))
    first_oops_ = kernel_part(line, static_cast<std::size_t>(m.position()));
  for (const auto& e : kEndings) {
    const auto at = line.find(e.needle);
    if (at == std::string::npos) continue;
    const std::string ending = kernel_part(line, at);
    std::string reason = std::string(e.meaning) + ": \"" + first_oops_.value_or(ending) + "\"";
    if (first_oops_ && *first_oops_ != ending) reason += " (then \"" + ending + "\")";
    failure_ = reason;
    return true;
  }
  return false;
}

}  // namespace schedlab::kernels
