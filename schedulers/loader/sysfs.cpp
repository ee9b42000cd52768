#include "sysfs.hpp"

#include <charconv>
#include <fstream>

namespace schedlab::scx {

std::optional<std::string> SchedExtSysfs::read(const std::string& relative) const {
  std::ifstream in(file(relative));
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<std::uint64_t> SchedExtSysfs::enable_seq() const {
  const auto text = read("enable_seq");
  if (!text) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

}  // namespace schedlab::scx
