#pragma once
// Reading a guest's serial console: its line ends made plain, and the lines that say why a boot failed.
#include <optional>
#include <string>

namespace schedlab::kernels {

// The console as text: "\r\n" (the serial driver's and the tty's line end, sometimes "\r\r\n") becomes
// one "\n", a lone "\r" (a progress line rewriting itself) ends its line, a kernel message glued to the
// end of a progress line ("~7 s left[   61.382039] Oops: int3") starts a line of its own, and terminal
// resets and colours ("\x1bc", "\x1b[0m") are dropped.
std::string normalise_console(const std::string& raw);

// Watches console lines, in order, for a guest that failed. The reason it gives is the FIRST sign of
// trouble (an Oops, a BUG, a die() header such as "int3: 0000 [#1]"), not the "Kernel panic - not
// syncing: Fatal exception" that follows it; the line that ended the boot is quoted after it.
class ConsoleWatcher {
 public:
  // One console line (any line end removed). True when the line ends the boot: a kernel panic, /init
  // giving up (SCHEDLAB-FATAL), a kernel image that did not decompress, no init.
  bool feed(const std::string& line);
  // Set once feed() returned true, e.g.
  // kernel panic: "[   41.02] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" (then "[   41.31] Kernel panic -
  // not syncing: Fatal exception in interrupt")
  const std::optional<std::string>& failure() const { return failure_; }
  // The first Oops/BUG line seen, fatal or not (a guest can carry on after an Oops in a process).
  const std::optional<std::string>& first_oops() const { return first_oops_; }

 private:
  std::optional<std::string> failure_, first_oops_;
};

}  // namespace schedlab::kernels
