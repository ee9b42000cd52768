#pragma once
// Running the external tools the kernels component is built on (apt-get, dpkg-deb, depmod, xz,
// cpio, qemu, kexec, grub-reboot): an argument vector, never a shell string, so a path with a space
// or a quote in it is one argument.
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace schedlab::kernels {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal (see signal) or never started
  int signal = 0;      // the signal that ended it, 0 otherwise
  std::string output;  // standard output (and standard error when merged)
  bool timed_out = false;
  bool stopped = false;  // on_line asked to stop it
  double seconds = 0;    // wall time from start to exit
};

struct ProcessOptions {
  std::optional<std::filesystem::path> cwd;
  std::string stdin_text;                            // written to the child's standard input, then closed
  bool merge_stderr = true;                          // standard error into output; otherwise inherited
  std::optional<std::filesystem::path> stdout_file;  // standard output to a file instead of output
  std::optional<std::chrono::seconds> timeout;       // SIGKILL to the child's process group after it
  // Called for each complete output line (without the newline) with the seconds since the start;
  // returning false kills the child's process group (a console pattern that means "give up").
  std::function<bool(const std::string& line, double seconds)> on_line;
  // Called about once a second with the seconds since the start; returning false kills it as above.
  std::function<bool(double seconds)> on_tick;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Like run_process, but a start failure or a non-zero exit throws Error naming the command and
// quoting the last lines of its output.
std::string run_checked(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// "apt-get download 'a b'": the command as a person would type it (for errors and --dry-run).
std::string shell_quote(const std::string& word);
std::string command_line(const std::vector<std::string>& argv);

// The last `n` lines of a text (for error messages that quote a tool's or a console's output).
std::string last_lines(const std::string& text, std::size_t n);

// The absolute path of a tool on PATH (or in /sbin, /usr/sbin), or nullopt.
std::optional<std::filesystem::path> find_tool(const std::string& name);

}  // namespace schedlab::kernels
