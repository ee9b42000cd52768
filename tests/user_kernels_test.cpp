// Kernels a developer brings (kernels/user_build.hpp, image_kernel.hpp, ref_recipes.hpp): git and tree
// recipes built on a real git repository of the stand-in kernel tree (tests/fixtures/fake-kernel-tree,
// whose Makefile does in miniature what kconfig and kbuild do, in tree or with O=), image recipes on
// real kernel images, and the errors bad input gets. The real thing at two refs of linux-source-6.12 is
// ci/kernel-git (an hour of compiling); booting an image recipe is in tests/image_boot_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/image_kernel.hpp"
#include "kernels/process.hpp"
#include "kernels/recipe.hpp"
#include "kernels/ref_recipes.hpp"
#include "kernels/source_build.hpp"
#include "kernels/user_build.hpp"
#include "test_util.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

using testing::slurp;
const auto put = testing::spit;

const fs::path kTree = fs::path(SCHEDLAB_FIXTURES_DIR) / "fake-kernel-tree";

// git with a fixed identity, so commits are made the same on any machine.
std::string git(const fs::path& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv{
      "git", "-c", "user.name=schedlab test", "-c", "user.email=test@schedlab", "-C", repo.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return trim(run_checked(argv));
}

// The options the suite's generated recipes require, known to the stand-in kconfig and set by the
// fragment (a real fragment names them all for a real defconfig: fragments/schedlab-defconfig-guest.config).
const char* kRequired[] = {
    "SCHEDSTATS",   "DEBUG_FS",       "PERF_EVENTS", "KALLSYMS_ALL",        "PROC_FS",
    "CGROUP_SCHED", "BLK_DEV_INITRD", "DEVTMPFS",    "SERIAL_8250_CONSOLE", "VIRTIO_PCI",
    "NET_9P",       "NET_9P_VIRTIO",  "9P_FS"};

class UserKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = dir.path() / "linux";
    recipes = dir.path() / "recipes";
    cache = dir.path() / "cache";
    fs::copy(kTree, repo, fs::copy_options::recursive);
    std::string defaults = slurp(repo / "Kconfig.defaults"), fragment = "CONFIG_FRAG_E=y\n";
    for (const char* o : kRequired) {
      defaults += std::string(o) + "=n\n";
      fragment += std::string("CONFIG_") + o + "=y\n";
    }
    put(repo / "Kconfig.defaults", defaults);
    put(recipes / "fragments/guest.config", fragment);
    git(repo, {"init", "-q"});
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "the unpatched tree"});
    base_commit = git(repo, {"rev-parse", "HEAD"});
    std::string sched = slurp(repo / "kernel/sched/fair.txt");
    sched.replace(sched.find("six"), 3, "six-yield-tail");
    put(repo / "kernel/sched/fair.txt", sched);
    git(repo, {"commit", "-q", "-a", "-m", "sched/fair: queue a yielding task behind all runnable tasks"});
    patched_commit = git(repo, {"rev-parse", "HEAD"});
  }

  void git_recipe(const std::string& name, const std::string& ref, const std::string& extra = "") {
    put(recipes / (name + ".toml"), "[source]\ntype = \"git\"\nrepository = \"" + repo.string() +
                                        "\"\nref = \"" + ref +
                                        "\"\nconfig = \"defconfig\"\n"
                                        "config_fragment = \"fragments/guest.config\"\nmodules = false\n" +
                                        extra);
  }

  KernelArtifacts build(const std::string& name, bool allow_dirty = false) {
    SourceBuildOptions o;
    o.jobs = 2;
    o.allow_dirty = allow_dirty;
    std::ostringstream log;
    return build_kernel(load_recipe(recipes, name), recipes, cache, o, log);
  }

  json built_json(const KernelArtifacts& k) {
    return json::parse(slurp(k.root.parent_path() / "built.json"));
  }

  std::string identity(const KernelArtifacts& k, const std::string& name) {
    for (const auto& [n, v] : k.identity)
      if (n == name) return v;
    return "(none)";
  }

  TempDir dir;
  fs::path repo, recipes, cache;
  std::string base_commit, patched_commit;
};

TEST_F(UserKernelTest, TwoRefsTheSecondBuiltFromTheFirstsCompiledClone) {
  git_recipe("mine-base", "HEAD~1");
  git_recipe("mine-patched", "HEAD");
  const auto a = build("mine-base");
  const json ja = built_json(a);
  EXPECT_EQ(ja["commit"], base_commit);
  EXPECT_EQ(ja["kind"], "git");
  EXPECT_EQ(ja["started"], "fresh: cloned, configured and compiled in full");
  EXPECT_EQ(identity(a, "source"), "git");
  EXPECT_EQ(identity(a, "commit"), base_commit);
  EXPECT_EQ(identity(a, "repo"), fs::canonical(repo).string());
  EXPECT_EQ(slurp(a.vmlinuz).find("six-yield-tail"), std::string::npos);

  const auto b = build("mine-patched");
  const json jb = built_json(b);
  EXPECT_EQ(jb["commit"], patched_commit);
  EXPECT_EQ(jb["seeded_from"], base_commit) << jb.dump(2);
  EXPECT_NE(jb["started"].get<std::string>().find("from the compiled clone of " + base_commit.substr(0, 12)),
            std::string::npos)
      << jb.dump(2);
  EXPECT_NE(slurp(b.vmlinuz).find("six-yield-tail"), std::string::npos)
      << "B's image is built from B's commit";
  const fs::path b_clone = b.root.parent_path() / "tree/src";
  // The copy carried A's objects (the stand-in counts its compilations): B's make ran on top of them.
  EXPECT_EQ(slurp(b_clone / "compiled.count"), "compiled\ncompiled\n");
  // Only the file the commit touched is newer than A's build: checkout rewrote nothing else.
  EXPECT_GT(fs::last_write_time(b_clone / "kernel/sched/fair.txt"),
            fs::last_write_time(b_clone / "Makefile"));
  // One compiled clone per repository stays: A's went once B's was built; A's kernel stays cached.
  EXPECT_FALSE(fs::exists(a.root.parent_path() / "tree"));
  EXPECT_TRUE(cached_build(load_recipe(recipes, "mine-base"), recipes, cache).has_value());
  EXPECT_EQ(slurp(b.config), slurp(a.config)) << "the same config on both paths";

  const auto between = commits_between(repo, base_commit, patched_commit, 20);
  EXPECT_EQ(between.count, 1);
  ASSERT_EQ(between.lines.size(), 1U);
  EXPECT_NE(between.lines[0].find("sched/fair: queue a yielding task"), std::string::npos);
}

TEST_F(UserKernelTest, AnInterruptedBuildKeepsItsLogAndResumesWhereItStopped) {
  put(repo / "FAIL_ONCE", "\n");
  git(repo, {"add", "FAIL_ONCE"});
  git(repo, {"commit", "-q", "-m", "a tree whose first make stops"});
  git_recipe("mine-stops", "HEAD");
  try {
    build("mine-stops");
    FAIL() << "the first make went through";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("first error: make: *** [Makefile:1234: vmlinux] Interrupt"), std::string::npos)
        << what;
    EXPECT_NE(what.find("full log: "), std::string::npos) << what;
  }
  const auto again = build("mine-stops");
  const json j = built_json(again);
  EXPECT_EQ(j["started"], "resumed an interrupted build (build_seconds covers this invocation only)")
      << j.dump(2);
  const auto log = slurp(again.root.parent_path() / "build.log");
  EXPECT_NE(log.find("Interrupt"), std::string::npos) << "the first make's output is kept in the log";
  EXPECT_EQ(slurp(again.root.parent_path() / "tree/src/compiled.count"), "compiled\n");
}

// A fragment written for many kernels names options some trees no longer have (SCHED_DEBUG is gone
// in 6.14): where the tree has Kconfig files, an option none of them defines is left out and said; one
// they define but olddefconfig dropped is still an error.
TEST_F(UserKernelTest, AFragmentOptionNoKconfigDefinesIsLeftOutAndADroppedOneIsAnError) {
  std::string kconfig;
  for (const auto& line : {std::string("SCHED_A"), std::string("FRAG_E"), std::string("OFF_F")})
    kconfig += "config " + line + "\n\tbool\n";
  for (const char* o : kRequired) kconfig += std::string("config ") + o + "\n\tbool\n";
  put(repo / "Kconfig", kconfig);
  git(repo, {"add", "Kconfig"});
  git(repo, {"commit", "-q", "-m", "a tree with Kconfig files"});
  put(recipes / "fragments/newer.config",
      slurp(recipes / "fragments/guest.config") + "CONFIG_GONE_IN_614=y\n");
  git_recipe("mine-newer", "HEAD");
  auto text = slurp(recipes / "mine-newer.toml");
  text.replace(text.find("fragments/guest.config"), 22, "fragments/newer.config");
  put(recipes / "mine-newer.toml", text);
  SourceBuildOptions o;
  std::ostringstream log;
  build_kernel(load_recipe(recipes, "mine-newer"), recipes, cache, o, log);
  EXPECT_NE(log.str().find("CONFIG_GONE_IN_614 of newer.config is not an option of this tree"),
            std::string::npos)
      << log.str();

  // OFF_F defaults on, and the stand-in kconfig keeps what .config says: a FORCED_G=n it would override.
  put(repo / "Kconfig", kconfig + "config FORCED_G\n\tbool\n");
  git(repo, {"commit", "-q", "-a", "-m", "FORCED_G is an option here"});
  put(recipes / "fragments/forced.config",
      slurp(recipes / "fragments/guest.config") + "# CONFIG_FORCED_G is not set\n");
  text.replace(text.find("fragments/newer.config"), 22, "fragments/forced.config");
  put(recipes / "mine-forced.toml", text);
  try {
    build("mine-forced");
    FAIL() << "a dropped option passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("make olddefconfig did not keep"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FORCED_G"), std::string::npos) << e.what();
  }
}

TEST_F(UserKernelTest, ARefThatDoesNotResolveIsAnInputErrorNamingIt) {
  git_recipe("mine-typo", "no-such-branch");
  try {
    build("mine-typo");
    FAIL() << "built";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ref 'no-such-branch' does not resolve to a commit"), std::string::npos) << what;
    EXPECT_NE(what.find("mine-typo.toml"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(cache / "builds")) << "nothing built or cloned";
  // A ref that looks like an option is a name to git, never an option.
  git_recipe("mine-option", "--output=/tmp/x");
  EXPECT_THROW(build("mine-option"), InputError);
}

TEST_F(UserKernelTest, ADirtyTreeNeedsAllowDirtyAndIsRecordedAsDirty) {
  put(recipes / "mine-tree.toml",
      "[source]\ntype = \"tree\"\npath = \"" + repo.string() +
          "\"\nconfig = \"defconfig\"\nconfig_fragment = \"fragments/guest.config\"\n"
          "modules = false\n");
  const auto clean = build("mine-tree");
  EXPECT_EQ(identity(clean, "dirty"), "0");
  EXPECT_EQ(identity(clean, "commit"), patched_commit);
  EXPECT_EQ(built_json(clean)["started"], "out of tree, compiled in full");
  EXPECT_TRUE(fs::exists(clean.root.parent_path() / "obj/compiled.count")) << "objects out of the tree";
  EXPECT_FALSE(fs::exists(repo / "compiled.count")) << "the source tree stays as it was";

  put(repo / "kernel/sched/fair.txt", slurp(repo / "kernel/sched/fair.txt") + "an edit\n");
  EXPECT_FALSE(cached_build(load_recipe(recipes, "mine-tree"), recipes, cache))
      << "an edited tree is not its earlier build";
  try {
    build("mine-tree");
    FAIL() << "a dirty tree built without allow_dirty";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("uncommitted changes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-dirty"), std::string::npos) << e.what();
  }
  const auto dirty = build("mine-tree", /*allow_dirty=*/true);
  EXPECT_EQ(identity(dirty, "dirty"), "1");
  EXPECT_TRUE(identity(dirty, "describe").ends_with("-dirty")) << identity(dirty, "describe");
  EXPECT_NE(slurp(dirty.vmlinuz).find("an edit"), std::string::npos);
  EXPECT_EQ(built_json(dirty)["started"], "out of tree, over the objects of an earlier build");
}

TEST_F(UserKernelTest, RecipeKeysOfAnotherKindAreErrorsNamingTheLine) {
  auto error_of = [&](const std::string& name, const std::string& text) {
    put(recipes / (name + ".toml"), text);
    try {
      load_recipe(recipes, name);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(loaded)");
  };
  const std::string git_head = "[source]\ntype = \"git\"\nrepository = \"" + repo.string() + "\"\n";
  auto what = error_of("p", git_head + "ref = \"HEAD\"\nconfig = \"defconfig\"\npatches = [\"x.patch\"]\n");
  EXPECT_NE(what.find("p.toml:6: [source] patches: not a key of a git recipe"), std::string::npos) << what;
  EXPECT_NE(what.find("commit the change"), std::string::npos) << what;
  what = error_of("q", git_head + "config = \"defconfig\"\n");
  EXPECT_NE(what.find("missing key 'ref'"), std::string::npos) << what;
  what = error_of("r", git_head + "ref = \"HEAD\"\nconfig = \"defconfig\"\nbase_config = \"debian-6.12\"\n");
  EXPECT_NE(what.find("name one of config, base_config and base_config_file"), std::string::npos) << what;
  what = error_of("s", git_head + "ref = \"HEAD\"\nconfig = \"tree\"\n");
  EXPECT_NE(what.find("'tree': expected \"defconfig\""), std::string::npos) << what;
  what = error_of("t", "[source]\ntype = \"tree\"\npath = \"" + repo.string() + "\"\nref = \"HEAD\"\n");
  EXPECT_NE(what.find("[source] ref: not a key of a tree recipe"), std::string::npos) << what;
  what = error_of("u", "[source]\ntype = \"git\"\nrepository = \"/no/such/repo\"\nref = \"HEAD\"\n");
  EXPECT_NE(what.find("/no/such/repo: no such directory"), std::string::npos) << what;
  what = error_of("v", "[source]\ntype = \"image\"\nkernel = \"/bin/true\"\ndeb = \"/bin/true\"\n");
  EXPECT_NE(what.find("either kernel (a bzImage) or deb"), std::string::npos) << what;
  what = error_of("w", "[source]\ntype = \"image\"\nkernel = \"/bin/true\"\n");
  EXPECT_NE(what.find("missing key 'config'"), std::string::npos) << what;
  what = error_of("x", "[source]\ntype = \"image\"\nkernel = \"/no/bzImage\"\nconfig = \"/bin/true\"\n");
  EXPECT_NE(what.find("x.toml:3: [source] kernel: /no/bzImage: no such file"), std::string::npos) << what;
  what = error_of("y", "[source]\ntype = \"svn\"\n");
  EXPECT_NE(what.find("expected \"package\", \"source\", \"git\", \"tree\" or \"image\""), std::string::npos)
      << what;
}

TEST_F(UserKernelTest, BuildGitWritesARecipePerRefBuildsBothAndShowsTheCommits) {
  const auto out = dir.path() / "mine";
  const auto r = testing::schedlab("kernel --cache-dir " + cache.string() + " build --git " + repo.string() +
                                   " --ref HEAD~1 --ref HEAD --fragment " +
                                   (recipes / "fragments/guest.config").string() + " --recipes-out " +
                                   out.string() + " --jobs 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("linux-HEAD-1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("linux-HEAD "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(base_commit.substr(0, 12)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 commit from HEAD~1 to HEAD"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sched/fair: queue a yielding task"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("from the compiled clone of " + base_commit.substr(0, 12)), std::string::npos)
      << r.out;
  const auto recipe = load_recipe(out, "linux-HEAD-1");
  EXPECT_EQ(recipe.kind, SourceKind::kGit);
  EXPECT_EQ(recipe.user.ref, "HEAD~1");
  EXPECT_EQ(recipe.user.config, "defconfig");
  EXPECT_EQ(recipe.label, "linux@HEAD~1");
  // Listed as built, under the names written.
  const auto list =
      testing::schedlab("kernel --recipes " + out.string() + " --cache-dir " + cache.string() + " list");
  EXPECT_NE(list.out.find("linux-HEAD-1"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("built"), std::string::npos) << list.out;

  const auto bad =
      testing::schedlab("kernel --cache-dir " + cache.string() + " build --git " + repo.string() +
                        " --ref HEAD --ref no-such-ref --recipes-out " + out.string());
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--ref no-such-ref: does not resolve to a commit in"), std::string::npos) << bad.out;
  // Someone's own recipe of that name is never overwritten.
  put(out / "linux-HEAD.toml",
      "# mine\n[source]\ntype = \"git\"\nrepository = \"/srv/other\"\nref = \"HEAD\"\n");
  const auto clash = testing::schedlab("kernel --cache-dir " + cache.string() + " build --git " +
                                       repo.string() + " --ref HEAD --recipes-out " + out.string());
  EXPECT_EQ(clash.code, 2) << clash.out;
  EXPECT_NE(clash.out.find("a different recipe of that name exists"), std::string::npos) << clash.out;
  EXPECT_EQ(slurp(out / "linux-HEAD.toml").rfind("# mine", 0), 0U);
}

TEST(ImageKernel, AFileWithoutABootSignatureIsNotAKernel) {
  TempDir dir;
  put(dir.path() / "notes.txt", std::string(4096, 'x'));
  for (const fs::path& f : {fs::path("/bin/true"), dir.path() / "notes.txt"}) {
    try {
      read_bzimage_header(f);
      FAIL() << f << " read as a kernel";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not a kernel image: no x86 boot signature"), std::string::npos)
          << e.what();
    }
  }
}

// The running machine's own kernel image, when /boot has it (Debian installs it there).
TEST(ImageKernel, TheRunningKernelsImageNamesItsRelease) {
  const auto release = trim(run_checked({"uname", "-r"}));
  const fs::path image = "/boot/vmlinuz-" + release;
  if (!fs::exists(image)) GTEST_SKIP() << image << " is not here";
  const auto h = read_bzimage_header(image);
  EXPECT_EQ(h.release, release);
  EXPECT_GE(h.protocol, 0x020cU);
  EXPECT_EQ(file_sha256(image).size(), 64U);
}

TEST(RefRecipes, RefsBecomeRecipeNames) {
  EXPECT_EQ(ref_name_part("HEAD~1"), "HEAD-1");
  EXPECT_EQ(ref_name_part("tip/sched/core"), "tip-sched-core");
  EXPECT_EQ(ref_name_part("v6.12^{}"), "v6.12");
  EXPECT_EQ(ref_name_part("~"), "ref");
}

}  // namespace
}  // namespace schedlab::kernels
