// Image recipes end to end: a Debian kernel package's own vmlinuz, System.map, config and modules, taken
// out of the package as a build farm would hand them over, installed as a prebuilt image and booted
// under qemu (TCG); its bundle's kernel identity names the image's sha256. Also the same files as a
// kernel .deb (`make bindeb-pkg`'s form), and what a file that is not a kernel gets. Label `qemu`:
// Release preset only. The package comes from the build tree's kernel cache (SCHEDLAB_KERNEL_CACHE).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "boot_util.hpp"
#include "cli_util.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/image_kernel.hpp"
#include "kernels/process.hpp"
#include "kernels/recipe.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

const std::string kCache = SCHEDLAB_KERNEL_CACHE;

using testing::can_boot;
using testing::files_with;
const auto load = testing::load_json;

// The requirements of the debian-6.12 recipe, as the image's recipe names them.
std::string require_list(const kernels::Recipe& r) {
  std::string out;
  for (const auto& q : r.require) {
    std::string allowed;
    for (const auto& a : q.allowed) allowed += (allowed.empty() ? "" : "|") + a;
    out += std::string(out.empty() ? "" : ", ") + "\"" + q.option + "=" + allowed + "\"";
  }
  return "[" + out + "]";
}

class ImageBoot : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!can_boot(why, {"/usr/bin/dpkg-deb"})) GTEST_SKIP() << why;
    debian = kernels::load_recipe(SCHEDLAB_SOURCE_DIR "/kernels/recipes", "debian-6.12");
    const auto fetched = testing::schedlab("kernel --cache-dir " + kCache + " fetch debian-6.12");
    ASSERT_EQ(fetched.code, 0) << fetched.out;
    release = debian.package.release;
    root = kCache + "/kernels/" + debian.cache_key() + "/root";
    ASSERT_TRUE(fs::exists(root / "boot" / ("vmlinuz-" + release))) << root;
    recipes = dir.path() / "recipes";
    fs::create_directories(recipes);
  }

  void image_recipe(const std::string& name, const std::string& source) {
    std::ofstream(recipes / (name + ".toml"))
        << "[kernel]\nlabel = \"" << name << "\"\n[source]\ntype = \"image\"\n"
        << source << "[boot]\ncmdline = \"" << debian.cmdline
        << "\"\n[config]\nrequire = " << require_list(debian) << "\n";
  }

  std::string kernel_args() const {
    return "kernel --recipes " + recipes.string() + " --cache-dir " + (dir.path() / "cache").string() + " ";
  }

  TempDir dir;
  kernels::Recipe debian;
  std::string release;
  fs::path root, recipes;
};

TEST_F(ImageBoot, ADebianKernelsFilesBootAsAPrebuiltImageNamedByItsHash) {
  const fs::path vmlinuz = root / "boot" / ("vmlinuz-" + release);
  image_recipe("farm-6.12", "kernel = \"" + vmlinuz.string() + "\"\nsystem_map = \"" +
                                (root / "boot" / ("System.map-" + release)).string() + "\"\nconfig = \"" +
                                (root / "boot" / ("config-" + release)).string() + "\"\nmodules = \"" +
                                (root / "lib/modules" / release).string() + "\"\n");
  const std::string sha = kernels::file_sha256(vmlinuz);
  const fs::path out = dir.path() / "out";
  auto booted = testing::schedlab(kernel_args() + "boot farm-6.12 --timeout 400 --out " + out.string() +
                                  " -- run --workload yield --repetitions 1 --param yield.yields=100000 "
                                  "--settle-timeout 0 --no-counters");
  ASSERT_EQ(booted.code, 0) << booted.out;
  const auto bundles = files_with(out, "2", ".json");
  ASSERT_EQ(bundles.size(), 1U) << booted.out;
  const json bundle = load(bundles[0]);
  const json& k = bundle["kernel"];
  EXPECT_EQ(k["release"], release);
  EXPECT_EQ(k["booted_by"]["recipe"], "farm-6.12");
  // The identity the host gave the guest, as the bundle recorded it from the guest's command line.
  EXPECT_NE(k["cmdline"].get<std::string>().find("schedlab.image=" + sha), std::string::npos) << k["cmdline"];
  EXPECT_NE(k["cmdline"].get<std::string>().find("schedlab.source=image"), std::string::npos) << k["cmdline"];
  EXPECT_EQ(k["booted_by"]["source"], "image") << k["booted_by"];
  EXPECT_EQ(k["booted_by"]["image_sha256"], sha) << k["booted_by"];
  EXPECT_EQ(bundle["instances"][0]["repetitions"][0]["status"], "ok");
  const auto records = files_with(out, "boot-farm-6.12-", ".json");
  ASSERT_FALSE(records.empty());
  const json record = load(records.back());
  EXPECT_EQ(record["status"], "ok");
  EXPECT_EQ(record["kernel"]["identity"]["image"], sha) << record["kernel"];
  EXPECT_EQ(record["kernel"]["release"], release);
}

TEST_F(ImageBoot, AKernelDebInstallsTheSameImageAndANonKernelIsRefused) {
  // The package's files as `make bindeb-pkg` would pack them (uncompressed: a test needs no xz pass).
  const fs::path pkg = dir.path() / "pkg";
  fs::create_directories(pkg);
  for (const char* part : {"boot", "lib"})
    kernels::run_checked({"cp", "-a", (root / part).string(), (pkg / part).string()});
  fs::create_directories(pkg / "DEBIAN");
  std::ofstream(pkg / "DEBIAN/control") << "Package: linux-image-farm\nVersion: 1\nArchitecture: amd64\n"
                                           "Maintainer: schedlab test <test@schedlab.invalid>\n"
                                           "Description: a kernel package made from Debian's own files\n";
  const fs::path deb = dir.path() / "linux-image-farm_1_amd64.deb";
  kernels::run_checked({"dpkg-deb", "-Znone", "--root-owner-group", "--build", pkg.string(), deb.string()});
  image_recipe("farm-deb", "deb = \"" + deb.string() + "\"\n");
  const auto built = testing::schedlab(kernel_args() + "build farm-deb");
  ASSERT_EQ(built.code, 0) << built.out;
  const fs::path installed = trim(built.out.substr(built.out.rfind('\n', built.out.size() - 2) + 1));
  const json j = load(installed / "installed.json");
  EXPECT_EQ(j["release"], release);
  EXPECT_EQ(j["sha256"], kernels::file_sha256(root / "boot" / ("vmlinuz-" + release))) << j.dump(2);
  EXPECT_TRUE(fs::exists(installed / "root/lib/modules" / release / "modules.dep"));

  image_recipe("farm-map", "kernel = \"" + (root / "boot" / ("System.map-" + release)).string() +
                               "\"\nconfig = \"" + (root / "boot" / ("config-" + release)).string() + "\"\n");
  const auto refused = testing::schedlab(kernel_args() + "build farm-map");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("not a kernel image: no x86 boot signature"), std::string::npos) << refused.out;
  // A .config without what the recipe requires is bad input too, naming the option.
  std::ofstream(recipes / "farm-rt.toml")
      << "[source]\ntype = \"image\"\nkernel = \"" << (root / "boot" / ("vmlinuz-" + release)).string()
      << "\"\nconfig = \"" << (root / "boot" / ("config-" + release)).string()
      << "\"\n[config]\nrequire = [\"PREEMPT_RT\"]\n";
  const auto lacking = testing::schedlab(kernel_args() + "build farm-rt");
  EXPECT_EQ(lacking.code, 2) << lacking.out;
  EXPECT_NE(lacking.out.find("CONFIG_PREEMPT_RT is not set (need y)"), std::string::npos) << lacking.out;
  const auto header = kernels::read_bzimage_header(root / "boot" / ("vmlinuz-" + release));
  EXPECT_EQ(header.release, release);
  EXPECT_NE(header.version.find("Debian " + debian.package.version), std::string::npos) << header.version;

  // RELIABILITY.md, paths: the release names the image's files in the cache and in /boot, so the same image
  // with a version string that leads elsewhere is refused.
  auto bytes = testing::slurp(root / "boot" / ("vmlinuz-" + release));
  const std::size_t at =
      (static_cast<unsigned char>(bytes.at(0x20E)) | static_cast<unsigned char>(bytes.at(0x20F)) << 8) +
      0x200U;
  const std::string hostile = "../../etc/cron.d/x ";
  bytes.replace(at, hostile.size(), hostile);
  std::ofstream(recipes / "hostile-vmlinuz", std::ios::binary) << bytes;
  try {
    kernels::read_bzimage_header(recipes / "hostile-vmlinuz");
    ADD_FAILURE() << "a release of '../../etc/cron.d/x' was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the kernel image's release '../../etc/cron.d/x' starts with '.'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace schedlab
