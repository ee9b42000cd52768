#include "fuzz/input_contract.hpp"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace schedlab::fuzz {

std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/schedlab-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern + " failed");
    return std::filesystem::path(pattern);
  }();
  return dir;
}

void write_file(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

}  // namespace schedlab::fuzz
