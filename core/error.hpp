#pragma once
// Errors as exceptions carrying their context. Only main() turns them into exit codes:
// InputError -> 2 (bad arguments, parameters or files: nothing written), anything else -> 1.
#include <stdexcept>
#include <string>

namespace schedlab {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user: arguments, parameters, events, bundle files.
class InputError : public Error {
 public:
  using Error::Error;
};

// A failed system call, with the errno it returned and what we were doing.
class SystemError : public Error {
 public:
  SystemError(const std::string& what, int err);
  int code() const noexcept { return code_; }

 private:
  int code_;
};

std::string errno_name(int err);  // "ENOENT"
std::string errno_text(int err);  // "ENOENT (No such file or directory)"

}  // namespace schedlab
