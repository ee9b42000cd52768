#include "core/host_paths.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace schedlab {

std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

bool write_kernel_file(const std::filesystem::path& path, const std::string& value, std::string& error) {
  std::ofstream out(path);
  out << value << '\n';
  out.close();
  if (out) return true;
  error = "writing " + value + " to " + path.string() + " failed: " + errno_text(errno);
  return false;
}

std::string boot_id(const HostPaths& paths) {
  return trim(read_text(paths.proc / "sys/kernel/random/boot_id").value_or(""));
}

std::optional<std::string> read_gzip_text(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::string text;
  char buf[16384];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  const bool ok = n == 0;
  gzclose(f);
  if (!ok) return std::nullopt;
  return text;
}

std::optional<std::string> read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::string();
  return line;
}

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

namespace {
int parse_cpu(std::string_view s, const std::string& list) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw InputError("malformed CPU list '" + list + "'");
  return v;
}
}  // namespace

std::vector<int> parse_cpu_list(const std::string& raw) {
  std::string list = trim(raw);
  std::vector<int> cpus;
  if (list.empty()) return cpus;
  std::string_view rest = list;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_cpu(item, list));
    } else {
      int lo = parse_cpu(item.substr(0, dash), list), hi = parse_cpu(item.substr(dash + 1), list);
      if (hi < lo) throw InputError("malformed CPU list '" + list + "'");
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace schedlab
