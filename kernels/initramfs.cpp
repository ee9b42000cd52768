#include "kernels/initramfs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

// "kernel/fs/9p/9p.ko.xz" -> "9p"; modprobe treats '-' and '_' alike, so do we.
std::string module_name(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  base = base.substr(0, base.find(".ko"));
  std::replace(base.begin(), base.end(), '-', '_');
  return base;
}

struct Compression {
  const char* suffix;
  const char* tool;
};
constexpr Compression kCompressions[] = {{".ko.xz", "xz"}, {".ko.zst", "zstd"}, {".ko.gz", "gzip"}};

void write_text(const fs::path& path, const std::string& text, bool executable) {
  fs::create_directories(path.parent_path());
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw SystemError("create " + path.string(), errno);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw SystemError("write " + path.string(), errno);
  if (executable)
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
}

// The guest's /init runs before any library is there: a dynamically linked busybox (Debian's `busybox`
// package, not `busybox-static`) ends as "no working init found". An ELF with a PT_INTERP program
// header is dynamically linked; the headers are read directly, so no `file` is needed.
void require_static_elf(const fs::path& binary) {
  const std::string fix = " (apt-get install busybox-static)";
  std::ifstream in(binary, std::ios::binary);
  if (!in) throw Error(binary.string() + ": missing" + fix);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto read_uint = [&](std::size_t at, std::size_t size) -> std::uint64_t {
    if (at + size > bytes.size()) throw Error(binary.string() + ": a truncated ELF file" + fix);
    std::uint64_t v = 0;  // x86 ELF files are little-endian
    for (std::size_t i = size; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  if (bytes.size() < 16 || bytes.compare(0, 4,
                                         "\x7f"
                                         "ELF") != 0)
    throw Error(binary.string() + ": not an ELF executable, so it cannot be the guest's busybox" + fix);
  const bool is64 = bytes[4] == 2;
  const std::uint64_t phoff = is64 ? read_uint(32, 8) : read_uint(28, 4);
  const std::uint64_t phentsize = read_uint(is64 ? 54 : 42, 2);
  const std::uint64_t phnum = read_uint(is64 ? 56 : 44, 2);
  constexpr std::uint64_t kPtInterp = 3;
  for (std::uint64_t i = 0; i < phnum; ++i)
    if (read_uint(phoff + i * phentsize, 4) == kPtInterp)
      throw Error(binary.string() +
                  ": dynamically linked (it names an ELF interpreter), and the guest's initramfs has no "
                  "libraries: its /init would not start; a static busybox is needed" +
                  fix);
}

}  // namespace

std::vector<std::string> module_closure(const fs::path& modules_dir, const std::vector<std::string>& roots) {
  auto dep_text = read_text(modules_dir / "modules.dep");
  if (!dep_text)
    throw InputError(modules_dir.string() +
                     "/modules.dep: missing (run `depmod -b ROOT RELEASE`; "
                     "`schedlab kernel fetch` does)");
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> deps;  // name -> (path, dep paths)
  std::istringstream in(*dep_text);
  for (std::string line; std::getline(in, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto path = line.substr(0, colon);
    deps[module_name(path)] = {path, split_ws(line.substr(colon + 1))};
  }
  std::set<std::string> builtin;
  std::istringstream bin(read_text(modules_dir / "modules.builtin").value_or(""));
  for (std::string line; std::getline(bin, line);)
    if (!line.empty()) builtin.insert(module_name(line));

  std::vector<std::string> order;
  std::set<std::string> done;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    if (done.count(name)) return;
    done.insert(name);
    auto it = deps.find(name);
    // modules.dep lists the whole closure, furthest dependency last: load in reverse.
    for (auto d = it->second.second.rbegin(); d != it->second.second.rend(); ++d) visit(module_name(*d));
    order.push_back(it->second.first);
  };
  for (const auto& raw : roots) {
    std::string name = raw;
    std::replace(name.begin(), name.end(), '-', '_');
    if (deps.count(name))
      visit(name);
    else if (!builtin.count(name))
      throw InputError("module " + raw + ": neither in " + (modules_dir / "modules.dep").string() +
                       " nor built in (modules.builtin)");
  }
  return order;
}

std::vector<std::string> build_initramfs(const InitramfsSpec& spec, const fs::path& out,
                                         const fs::path& scratch) {
  require_static_elf(spec.busybox);
  const auto stage = scratch / "initramfs-root";
  fs::remove_all(stage);
  for (const char* d : {"bin", "dev", "proc", "sys", "tmp", "run", "lib/modules", "etc/schedlab", "boot"})
    fs::create_directories(stage / d);
  fs::copy_file(spec.busybox, stage / "bin/busybox");

  std::vector<std::string> loaded;
  for (const auto& rel : module_closure(spec.modules_dir, spec.module_roots)) {
    const auto src = spec.modules_dir / rel;
    const auto dst = stage / "lib/modules" / (module_name(rel) + ".ko");
    bool copied = false;
    for (const auto& c : kCompressions)
      if (rel.size() > std::string(c.suffix).size() && rel.ends_with(c.suffix)) {
        ProcessOptions to_file;
        to_file.merge_stderr = false;
        to_file.stdout_file = dst;
        run_checked({c.tool, "-dc", src.string()}, to_file);
        copied = true;
      }
    if (!copied) fs::copy_file(src, dst);
    loaded.push_back(module_name(rel));
  }
  std::string list;
  for (const auto& m : loaded) list += m + "\n";
  write_text(stage / "etc/schedlab/modules", list, false);
  for (const auto& [path, content] : spec.files) write_text(stage / path.substr(1), content, path == "/init");
  for (const auto& [path, host] : spec.copies) {
    fs::create_directories((stage / path.substr(1)).parent_path());
    fs::copy_file(host, stage / path.substr(1), fs::copy_options::overwrite_existing);
  }
  if (!fs::exists(stage / "init")) throw Error("initramfs without /init");

  std::string names;
  std::vector<std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(stage))
    entries.push_back(fs::relative(e.path(), stage).string());
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) names += e + "\n";
  fs::create_directories(out.parent_path());
  ProcessOptions cpio;
  cpio.cwd = stage;
  cpio.stdin_text = names;
  cpio.merge_stderr = false;
  cpio.stdout_file = out;
  run_checked({"cpio", "--quiet", "-o", "-H", "newc", "--owner=0:0"}, cpio);
  return loaded;
}

}  // namespace schedlab::kernels
