#pragma once
// Running the built schedlab binary (and peers) from tests.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace schedlab::testing {

struct Outcome {
  int code = -1;
  std::string out;  // stdout and stderr
};

inline Outcome sh(const std::string& cmd) {
  Outcome o;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) o.out.append(buf, n);
  int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

inline Outcome schedlab(const std::string& args) {
  // Appended, not `std::string(...) + " " + args`: GCC 12 inlines that concatenation into a false
  // array-bounds warning in some test bodies.
  std::string command = SCHEDLAB_BINARY;
  command += ' ';
  command += args;
  return sh(command);
}

// The CLI's text with its wrapped lines joined: a line break and the indent after it read as one space,
// so a phrase is found wherever the width broke it.
inline std::string unwrapped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size() && text[i + 1] == ' ') {
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

// Google Benchmark's tools/compare.py as Debian ships it (libbenchmark-tools).
inline const std::filesystem::path kComparePy = "/usr/share/benchmark/compare.py";

struct ComparePy {
  Outcome outcome;
  std::map<std::string, int> rows;  // benchmark name -> comparison rows printed for it
};

// compare.py's `benchmarks` mode on two Google Benchmark JSON files, run by Debian's python3, whose
// python3-scipy the package depends on (a python3 earlier on PATH, pyenv or a venv, may lack scipy).
inline ComparePy run_compare_py(const std::string& a, const std::string& b) {
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  ComparePy r{sh(python + " " + kComparePy.string() + " --no-color benchmarks " + a + " " + b), {}};
  // A row: name, time and CPU change, old and new time and CPU, e.g.
  // "yield/ns_per_yield                 +0.0212         +0.0212           659           673 ..."
  const std::regex row(R"(^(\S+)\s+[-+]\d+\.\d{4}\s+[-+]\d+\.\d{4}\s+\d+\s+\d+\s+\d+\s+\d+$)");
  std::istringstream lines(r.outcome.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) ++r.rows[m[1]];
  }
  return r;
}

}  // namespace schedlab::testing
