#pragma once
// The one error type of the loader: what failed, the exit code main() should give it (2 = refused
// before loading, 1 = the kernel or libbpf said no) and errno where there is one.
#include <stdexcept>
#include <string>

namespace schedlab::scx {

enum class ExitCode : int { ok = 0, failed = 1, refused = 2, ejected = 3 };

class LoaderError : public std::runtime_error {
 public:
  LoaderError(ExitCode code, std::string stage, const std::string& message, int errno_value = 0)
      : std::runtime_error(message), code_(code), stage_(std::move(stage)), errno_value_(errno_value) {}
  ExitCode code() const { return code_; }
  const std::string& stage() const { return stage_; }  // "usage", "refused", "load", "attach", ...
  int errno_value() const { return errno_value_; }

 private:
  ExitCode code_;
  std::string stage_;
  int errno_value_;
};

}  // namespace schedlab::scx
