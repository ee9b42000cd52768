#include "options.hpp"

#include <cmath>
#include <string_view>

#include "loader_error.hpp"

namespace schedlab::scx {
namespace {

LoaderError usage_error(const std::string& message) {
  return LoaderError(ExitCode::refused, "usage", message + "\n" + usage());
}

std::chrono::milliseconds parse_seconds(std::string_view option, const std::string& text) {
  std::size_t used = 0;
  double seconds = 0;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(seconds) || seconds <= 0) {
    throw usage_error(std::string(option) + ": expected a positive number of seconds, got '" + text + "'");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
}

}  // namespace

std::string usage() {
  return "usage: schedlab-scx [--sysfs DIR] [--attach-timeout SECONDS] OBJECT.bpf.o\n"
         "  Attaches the sched_ext scheduler in OBJECT (its ops name must be OBJECT's stem) and keeps it\n"
         "  attached until SIGTERM/SIGINT. Events as JSON lines on stdout; see schedulers/README.md.\n"
         "  --sysfs DIR              the sched_ext sysfs directory (default /sys/kernel/sched_ext)\n"
         "  --attach-timeout SECONDS how long to wait for state 'enabled' (default 10)\n";
}

LoaderOptions parse_options(std::span<char* const> args) {
  LoaderOptions options;
  bool have_object = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage_error(std::string(arg) + ": missing argument");
      return args[++i];
    };
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--sysfs") {
      options.sysfs_dir = value();
    } else if (arg == "--attach-timeout") {
      options.attach_timeout = parse_seconds(arg, value());
    } else if (arg.starts_with("-") && arg != "-") {
      throw usage_error("unknown option: " + std::string(arg));
    } else if (have_object) {
      throw usage_error("extra argument: " + std::string(arg) + " (one OBJECT.bpf.o only)");
    } else {
      options.object = std::string(arg);
      have_object = true;
    }
  }
  if (!have_object && !options.help) throw usage_error("missing argument: OBJECT.bpf.o");
  return options;
}

std::string ops_name_of(const std::filesystem::path& object) {
  std::string name = object.filename().string();
  for (std::string_view suffix : {".bpf.o", ".o"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix))
      return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

}  // namespace schedlab::scx
