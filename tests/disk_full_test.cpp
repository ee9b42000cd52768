// A full disk under the output directory (RELIABILITY.md, faults): `schedlab run` says so, naming the
// file and ENOSPC, exits non-zero, leaves no partial bundle under its final name and no temporary, and
// the bundle written before the disk filled is intact. The output directory is a small tmpfs mounted by
// the test (root only: elsewhere the test says why it skips).
#include <sys/mount.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "cli_util.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using testing::files_in;
using testing::schedlab;
using testing::slurp;
using testing::TempDir;

// A tmpfs of `bytes` at `dir`, unmounted when the test ends.
class SmallTmpfs {
 public:
  SmallTmpfs(const fs::path& dir, std::size_t bytes) : dir_(dir) {
    fs::create_directories(dir_);
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) err_ = errno;
  }
  ~SmallTmpfs() {
    if (!err_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  int error() const { return err_; }

 private:
  fs::path dir_;
  int err_ = 0;
};

// Writes a file of zeros until the file system is full.
void fill(const fs::path& file) {
  std::ofstream out(file, std::ios::binary);
  const std::string block(4096, '\0');
  while (out.write(block.data(), block.size()) && out.flush()) {
  }
}

TEST(DiskFull, ARunOnAFullDiskSaysSoAndKeepsTheEarlierBundle) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  SmallTmpfs tmpfs(out, 1 << 20);
  if (tmpfs.error()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(tmpfs.error());

  const std::string run =
      "run --workload yield --param yield.yields=20000 --repetitions 1 --out " + out.string();
  const auto first = schedlab(run);
  ASSERT_EQ(first.code, 0) << first.out;
  const auto earlier = files_in(out);
  ASSERT_EQ(earlier.size(), 1u);
  const std::string earlier_text = slurp(earlier[0]);

  fill(out / "filler");
  const auto full = schedlab(run);
  EXPECT_NE(full.code, 0) << full.out;
  EXPECT_NE(full.out.find("ENOSPC"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find(out.string()), std::string::npos) << "the message names no file: " << full.out;

  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{earlier[0].filename().string(), "filler"}))
      << "a partial bundle or a temporary was left";
  EXPECT_EQ(slurp(earlier[0]), earlier_text);
}

}  // namespace
}  // namespace schedlab
