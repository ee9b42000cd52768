#include "kernels/root_image.hpp"

#include <sys/stat.h>

#include <chrono>
#include <ostream>

#include "core/error.hpp"
#include "kernels/process.hpp"

namespace schedlab::kernels {

namespace fs = std::filesystem;

fs::path root_image_path(const fs::path& work_dir) {
  struct stat st {};
  long stamp = ::stat("/var/lib/dpkg/status", &st) == 0 ? static_cast<long>(st.st_mtime) : 0;
  return work_dir / "root-images" / ("usr-etc-" + std::to_string(stamp) + ".ext4");
}

void ensure_root_image(const fs::path& image, std::ostream& log) {
  if (fs::exists(image)) return;
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path stage = image.string() + ".stage";
  const fs::path partial = image.string() + ".partial";
  fs::remove_all(stage);
  fs::create_directories(stage);
  log << "root image: copying /usr and /etc into " << stage.string() << "\n" << std::flush;
  // Large trees no benchmark needs stay out; the image is a snapshot of the host's packages.
  run_checked({"sh", "-c",
               "tar -C / -cf - --exclude=usr/local --exclude=usr/share/doc --exclude=usr/share/man "
               "--exclude=usr/share/locale --exclude=usr/lib/jvm --exclude=usr/lib/google-cloud-sdk "
               "--exclude=usr/lib/chromium usr etc | tar -C " +
                   shell_quote(stage.string()) + " -xf -"});
  for (const char* link : {"bin", "lib", "lib64", "sbin"})
    if (fs::is_symlink(fs::path("/") / link))
      fs::create_symlink(fs::read_symlink(fs::path("/") / link), stage / link);
  for (const char* dir : {"proc", "sys", "dev", "tmp", "run", "var/tmp", "root", "mnt", "boot"})
    fs::create_directories(stage / dir);
  auto du = run_checked({"du", "-sm", stage.string()});
  const long mib = std::stol(du) * 5 / 4 + 256;
  fs::remove(partial);
  run_checked({"truncate", "-s", std::to_string(mib) + "M", partial.string()});
  run_checked({"mkfs.ext4", "-q", "-F", "-d", stage.string(), partial.string()});
  fs::rename(partial, image);
  fs::remove_all(stage);
  log << "root image: " << image.string() << " (" << mib << " MiB) built in "
      << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count()
      << " s\n";
}

}  // namespace schedlab::kernels
