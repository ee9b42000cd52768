#include "kernels/image_kernel.hpp"

#include <fstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/host_paths.hpp"
#include "kernels/process.hpp"
#include "kernels/source_build.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;

constexpr const char* kReadyFile = "installed.json";

// The file the cache entry is keyed by: the kernel image, or the deb that holds it.
const fs::path& keyed_file(const Recipe& r) {
  return r.image.deb.empty() ? r.image.kernel : r.image.deb;
}

fs::path entry_dir(const Recipe& r, const fs::path& cache, const std::string& sha) {
  return cache / "images" / (r.name + "-" + sha.substr(0, 16));
}

void require_image_recipe(const Recipe& r) {
  if (r.kind != SourceKind::kImage) throw InputError(r.name + " is not an image recipe");
}

KernelArtifacts artifacts_of(const nlohmann::json& ready, const fs::path& root) {
  const std::string sha = ready.value("sha256", std::string());
  KernelArtifacts k = artifacts_under(root, "image", sha, ready.at("release"));
  k.hash = sha;
  if (ready.contains("build_id") && ready["build_id"].is_string()) k.build_id = ready["build_id"];
  k.identity = {{"source", "image"}, {"image", ready.value("sha256", std::string())}};
  return k;
}

void copy_into(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

}  // namespace

BzImageHeader read_bzimage_header(const fs::path& image) {
  std::ifstream in(image, std::ios::binary);
  if (!in) throw InputError(image.string() + ": cannot read it");
  std::string head(0x10000, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  auto u16 = [&](std::size_t at) {
    return static_cast<unsigned>(static_cast<unsigned char>(head[at])) |
           static_cast<unsigned>(static_cast<unsigned char>(head[at + 1])) << 8;
  };
  if (head.size() < 0x210 || u16(0x1FE) != 0xAA55 || head.compare(0x202, 4, "HdrS") != 0)
    throw InputError(image.string() +
                     ": not a kernel image: no x86 boot signature (0xAA55 at 0x1FE and \"HdrS\" at 0x202)");
  BzImageHeader h;
  h.protocol = u16(0x206);
  const std::size_t at = u16(0x20E) + 0x200u;
  if (u16(0x20E) == 0 || at >= head.size())
    throw InputError(image.string() + ": a kernel image without a version string (boot protocol " +
                     std::to_string(h.protocol >> 8) + "." + std::to_string(h.protocol & 0xff) + ")");
  const auto end = head.find('\0', at);
  h.version = head.substr(at, end == std::string::npos ? std::string::npos : end - at);
  h.release = h.version.substr(0, h.version.find(' '));
  if (h.release.empty()) throw InputError(image.string() + ": the kernel image's version string is empty");
  // The release names its files in the cache and in /boot.
  if (const auto why = why_not_a_file_name_word(h.release); !why.empty())
    throw InputError(image.string() + ": the kernel image's release '" + h.release + "' " + why);
  return h;
}

std::string file_sha256(const fs::path& file) {
  ProcessOptions o;
  o.merge_stderr = false;
  const auto out = run_checked({"sha256sum", "--", file.string()}, o);
  const auto hex = out.substr(0, out.find(' '));
  if (hex.size() != 64) throw Error("sha256sum " + file.string() + ": unexpected output: " + out);
  return hex;
}

std::optional<KernelArtifacts> cached_image(const Recipe& r, const fs::path& cache) {
  require_image_recipe(r);
  const fs::path dir = entry_dir(r, cache, file_sha256(keyed_file(r)));
  const auto ready = read_text(dir / kReadyFile);
  if (!ready) return std::nullopt;
  return artifacts_of(nlohmann::json::parse(*ready), dir / "root");
}

KernelArtifacts install_image(const Recipe& r, const fs::path& cache, std::ostream& log) {
  require_image_recipe(r);
  const std::string key_sha = file_sha256(keyed_file(r));
  const fs::path dir = entry_dir(r, cache, key_sha);
  fs::create_directories(dir.parent_path());
  const FileLock lock(dir.string() + ".lock", "installing " + r.name + " into " + dir.string());
  if (auto done = cached_image(r, cache)) {
    log << r.name << ": installed before: " << dir.string() << "\n";
    return *done;
  }
  const fs::path work = dir.parent_path() / (dir.filename().string() + ".partial");
  fs::remove_all(work);
  const fs::path root = work / "root";
  fs::create_directories(root / "boot");
  nlohmann::json ready = {{"recipe", r.name}};
  std::string release;
  fs::path vmlinuz;
  if (!r.image.deb.empty()) {
    log << r.name << ": unpacking " << r.image.deb.string() << "\n" << std::flush;
    const auto res = run_process({"dpkg-deb", "-x", r.image.deb.string(), root.string()});
    if (res.exit_code != 0)
      throw InputError(r.file.string() + ": [source] deb: " + r.image.deb.string() +
                       " is not a package dpkg-deb can unpack:\n" + last_lines(res.output, 4));
    std::vector<fs::path> images;
    for (const auto& e : fs::directory_iterator(root / "boot"))
      if (e.path().filename().string().starts_with("vmlinuz-")) images.push_back(e.path());
    if (images.size() != 1)
      throw InputError(r.file.string() + ": [source] deb: " + r.image.deb.string() + " holds " +
                       std::to_string(images.size()) + " boot/vmlinuz-* files; a kernel package holds one");
    vmlinuz = images.front();
    release = read_bzimage_header(vmlinuz).release;
    if (vmlinuz.filename() != "vmlinuz-" + release)
      throw InputError(r.image.deb.string() + ": " + vmlinuz.filename().string() + " says it is release " +
                       release);
    for (const auto& f : {root / "boot" / ("config-" + release), root / "lib/modules" / release})
      if (!fs::exists(f))
        throw InputError(r.image.deb.string() + ": has no " + fs::relative(f, root).string() +
                         " (a kernel package carries its config and modules)");
    ready["deb"] = r.image.deb.string();
    ready["deb_sha256"] = key_sha;
  } else {
    const auto header = read_bzimage_header(r.image.kernel);
    release = header.release;
    vmlinuz = root / "boot" / ("vmlinuz-" + release);
    copy_into(r.image.kernel, vmlinuz);
    copy_into(r.image.config, root / "boot" / ("config-" + release));
    if (!r.image.system_map.empty()) copy_into(r.image.system_map, root / "boot" / ("System.map-" + release));
    if (!r.image.modules.empty()) {
      if (r.image.modules.filename() != release)
        throw InputError(r.file.string() + ": [source] modules: " + r.image.modules.string() +
                         " is not lib/modules/" + release + ", the release " +
                         r.image.kernel.filename().string() + " reports (its modules would not load)");
      fs::create_directories(root / "lib/modules");
      run_checked({"cp", "-a", "--", r.image.modules.string(), (root / "lib/modules").string()});
    }
    ready["kernel"] = r.image.kernel.string();
    ready["version"] = header.version;
  }
  if (!r.image.vmlinux.empty()) {
    const auto id = elf_build_id(r.image.vmlinux);
    if (!id)
      throw InputError(r.file.string() + ": [source] vmlinux: " + r.image.vmlinux.string() +
                       " is not an ELF with a GNU build id (the vmlinux the image was built with)");
    ready["build_id"] = *id;
    ready["vmlinux"] = r.image.vmlinux.string();
  }
  if (fs::is_directory(root / "lib/modules" / release)) run_checked({"depmod", "-b", root.string(), release});
  ready["release"] = release;
  ready["sha256"] = file_sha256(vmlinuz);
  write_file_atomic(work / kReadyFile, ready.dump(2) + "\n");
  fs::remove_all(dir);
  fs::rename(work, dir);
  log << r.name << ": installed " << release << " (sha256 "
      << ready["sha256"].get<std::string>().substr(0, 16) << "...) into " << dir.string() << "\n";
  return artifacts_of(ready, dir / "root");
}

}  // namespace schedlab::kernels
