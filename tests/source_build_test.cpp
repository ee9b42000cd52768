// Source builds on a stand-in tree: a tarball of a tiny fake kernel tree whose Makefile does what
// kconfig and kbuild do that the build code relies on (olddefconfig keeps set symbols and gives new
// ones their default, drops unknown ones; mod2noconfig turns =m off; bzImage/kernelrelease/
// modules_install leave the files the build copies). The cache is pre-seeded with the unpacked
// linux-source folder and a fetched base package, so no apt is needed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "kernels/bundle_identity.hpp"
#include "kernels/config_check.hpp"
#include "kernels/process.hpp"
#include "kernels/recipe.hpp"
#include "kernels/source_build.hpp"
#include "test_util.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The stand-in tree (its Makefile, kconfig and make bzImage in miniature, and two source files).
const fs::path kTree = fs::path(SCHEDLAB_FIXTURES_DIR) / "fake-kernel-tree";
const std::string kDefaults = slurp_file(kTree / "Kconfig.defaults");
const std::string kSched = slurp_file(kTree / "kernel/sched/fair.txt");

std::string unified_diff(const fs::path& work, const std::string& file, const std::string& before,
                         const std::string& after) {
  put(work / "a" / file, before);
  put(work / "b" / file, after);
  ProcessOptions o;
  o.cwd = work;
  auto res = run_process({"diff", "-u", "a/" + file, "b/" + file}, o);
  EXPECT_EQ(res.exit_code, 1) << res.output;
  fs::remove_all(work / "a");
  fs::remove_all(work / "b");
  return res.output;
}

class SourceBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    recipes = dir.path() / "recipes";
    cache = dir.path() / "cache";
    // The stand-in linux-source tarball, unpacked by the build like Debian's.
    fs::create_directories(dir.path() / "src");
    fs::copy(kTree, dir.path() / "src/linux-source-fake", fs::copy_options::recursive);
    seed(cache);
    put(recipes / "fake-base.toml",
        "[source]\npackage = \"linux-image-fake\"\nversion = \"1\"\nrelease = \"1.0-base\"\n");

    // A patch adding a `tristate default m` option, and one that needs fuzz (its context was
    // written against a fair.txt whose line 3 differed).
    put(recipes / "patches/add-option.patch",
        unified_diff(dir.path(), "Kconfig.defaults", kDefaults, std::string(kDefaults) + "NEW_X=m\n"));
    std::string fuzzy_before = kSched, fuzzy_after = kSched;
    fuzzy_before.replace(fuzzy_before.find("three"), 5, "three-old");
    fuzzy_after.replace(fuzzy_after.find("three"), 5, "three-old");
    fuzzy_after.replace(fuzzy_after.find("six"), 3, "six-patched");
    put(recipes / "patches/fuzzy.patch",
        unified_diff(dir.path(), "kernel/sched/fair.txt", fuzzy_before, fuzzy_after));
    put(recipes / "fragments/builtin.config", "CONFIG_FRAG_E=y\n");
  }

  // A cache with the unpacked linux-source folder (its `unpacked` marker: no apt) and the base
  // recipe's packaged kernel, as fetch leaves it.
  void seed(const fs::path& in_cache) {
    const fs::path srcs = in_cache / "sources/linux-source-fake_1.0";
    fs::create_directories(srcs / "x/usr/src");
    run_checked({"tar", "-cJf", (srcs / "x/usr/src/linux-source-fake.tar.xz").string(), "-C",
                 (dir.path() / "src").string(), "linux-source-fake"});
    put(srcs / "unpacked", "\n");
    const fs::path base = in_cache / "kernels/linux-image-fake_1";
    put(base / "root/boot/config-1.0-base", "CONFIG_SCHED_A=y\nCONFIG_MOD_B=m\nCONFIG_OFF_C=y\n");
    put(base / "fetched.json", "{}\n");
  }

  void recipe(const std::string& name, const std::string& extra_source, const std::string& tail = "") {
    put(recipes / (name + ".toml"),
        "[source]\ntype = \"source\"\npackage = \"linux-source-fake\"\nversion = \"1.0\"\n"
        "base_config = \"fake-base\"\nconfig_fragment = \"fragments/builtin.config\"\nmodules = false\n" +
            extra_source + tail);
  }

  KernelArtifacts build(const std::string& name, const fs::path& in_cache, bool prepare_only = false) {
    SourceBuildOptions o;
    o.prepare_only = prepare_only;
    o.jobs = 2;
    std::ostringstream log;
    return build_kernel(load_recipe(recipes, name), recipes, in_cache, o, log);
  }

  std::string error_of(const std::string& name, bool prepare_only = false) {
    try {
      build(name, cache, prepare_only);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << name << " built";
    return "";
  }

  json built_json(const KernelArtifacts& k) {
    return json::parse(slurp_file(k.root.parent_path() / "built.json"));
  }

  TempDir dir;
  fs::path recipes, cache;
};

TEST_F(SourceBuildTest, PatchNeedingFuzzIsRefusedNamingIt) {
  // The patch does apply under patch's default fuzz: what is refused is the guess, not a broken file.
  const fs::path probe = dir.path() / "probe";
  put(probe / "kernel/sched/fair.txt", kSched);
  ProcessOptions o;
  o.cwd = probe;
  ASSERT_EQ(
      run_process({"patch", "-p1", "--batch", "-i", (recipes / "patches/fuzzy.patch").string()}, o).exit_code,
      0);

  recipe("fake-fuzzy", "patches = [\"patches/fuzzy.patch\"]\n");
  const auto what = error_of("fake-fuzzy");
  EXPECT_NE(what.find("fuzzy.patch does not apply exactly"), std::string::npos) << what;
  EXPECT_NE(what.find("fake-fuzzy.toml"), std::string::npos) << what;
}

TEST_F(SourceBuildTest, PatchOutputAndBuildIdAreInBuiltJson) {
  recipe("fake-patched", "patches = [\"patches/add-option.patch\"]\n");
  const auto k = build("fake-patched", cache);
  const json j = built_json(k);
  ASSERT_EQ(j["patches"].size(), 1U) << j.dump(2);
  EXPECT_EQ(j["patches"][0]["file"], "add-option.patch");
  EXPECT_NE(j["patches"][0]["output"].get<std::string>().find("patching file Kconfig.defaults"),
            std::string::npos);
  EXPECT_EQ(j["log"], "build.log");
  EXPECT_TRUE(fs::exists(k.root.parent_path() / "build.log"));
  EXPECT_NE(j["compiler"].get<std::string>().find("gcc"), std::string::npos) << j["compiler"];
  // The build id is the vmlinux's (here /bin/true's), as readelf reads it.
  const auto notes = run_checked({"readelf", "-n", "/bin/true"});
  const auto at = notes.find("Build ID: ");
  ASSERT_NE(at, std::string::npos) << notes;
  const std::string readelf_id = notes.substr(at + 10, notes.find('\n', at) - at - 10);
  EXPECT_EQ(j["build_id"], readelf_id);
  EXPECT_EQ(k.build_id, readelf_id);
  EXPECT_EQ(k.hash, j["hash"].get<std::string>());
  EXPECT_EQ(elf_build_id("/bin/true"), readelf_id);
}

TEST_F(SourceBuildTest, TwinSeededConfigEqualsFreshConfig) {
  recipe("fake-pristine", "");
  recipe("fake-patched", "patches = [\"patches/add-option.patch\"]\n");
  build("fake-pristine", cache);
  const auto seeded = build("fake-patched", cache);
  ASSERT_NE(built_json(seeded)["started"].get<std::string>().find("compiled tree of fake-pristine"),
            std::string::npos)
      << built_json(seeded).dump(2);
  const fs::path fresh_cache = dir.path() / "fresh-cache";
  seed(fresh_cache);
  const auto fresh = build("fake-patched", fresh_cache);
  EXPECT_EQ(built_json(fresh)["started"], "fresh: unpacked, configured and compiled in full");
  EXPECT_EQ(seeded.hash, fresh.hash);
  // The option the patch adds defaults to m, and modules = false turns it off on both paths.
  EXPECT_NE(slurp_file(fresh.config).find("# CONFIG_NEW_X is not set"), std::string::npos)
      << slurp_file(fresh.config);
  EXPECT_EQ(slurp_file(seeded.config), slurp_file(fresh.config));
}

TEST_F(SourceBuildTest, PrepareOnlyLeavesAFinishedBuild) {
  recipe("fake-patched", "patches = [\"patches/add-option.patch\"]\n");
  const auto k = build("fake-patched", cache);
  const auto again = build("fake-patched", cache, /*prepare_only=*/true);
  EXPECT_TRUE(fs::exists(k.root.parent_path() / "built.json"));
  EXPECT_TRUE(fs::exists(k.vmlinuz));
  EXPECT_EQ(again.vmlinuz, k.vmlinuz);
}

TEST_F(SourceBuildTest, FailedBuildKeepsItsLogAndShowsTheFirstError) {
  put(recipes / "fragments/broken.config", "CONFIG_BREAK_BUILD=y\n");
  recipe("fake-broken", "", "");
  auto text = slurp_file(recipes / "fake-broken.toml");
  text.replace(text.find("fragments/builtin.config"), 24, "fragments/broken.config");
  put(recipes / "fake-broken.toml", text);
  const auto what = error_of("fake-broken");
  EXPECT_NE(what.find("first error: kernel/sched/fair.c:12:3: error: 'yield_tail' undeclared"),
            std::string::npos)
      << what;
  const auto at = what.find("full log: ");
  ASSERT_NE(at, std::string::npos) << what;
  const fs::path log_file = what.substr(
      at + 10, what.find('\n', at) == std::string::npos ? std::string::npos : what.find('\n', at) - at - 10);
  EXPECT_EQ(log_file.filename(), "build.log");
  const auto log_text = slurp_file(log_file);
  EXPECT_NE(log_text.find("kernel/early1.o"), std::string::npos);  // everything, not the last lines
  EXPECT_NE(log_text.find("drivers/noise30.o"), std::string::npos);
  EXPECT_NE(log_text.find("] Error 1"), std::string::npos);  // standard error too
}

TEST_F(SourceBuildTest, NegativeFragmentLinesMeanOff) {
  put(recipes / "fragments/negative.config", "CONFIG_FRAG_E=y\n# CONFIG_OFF_C is not set\nCONFIG_OFF_F=n\n");
  recipe("fake-negative", "", "");
  auto text = slurp_file(recipes / "fake-negative.toml");
  text.replace(text.find("fragments/builtin.config"), 24, "fragments/negative.config");
  put(recipes / "fake-negative.toml", text);
  const auto k = build("fake-negative", cache, /*prepare_only=*/true);
  const auto config = slurp_file(k.config);
  EXPECT_NE(config.find("# CONFIG_OFF_C is not set"), std::string::npos) << config;
  EXPECT_NE(config.find("# CONFIG_OFF_F is not set"), std::string::npos) << config;

  // An option the fragment turns off that olddefconfig turns on (selected by another) is an error.
  put(recipes / "fragments/forced.config", "# CONFIG_FORCED_G is not set\n");
  text.replace(text.find("fragments/negative.config"), 25, "fragments/forced.config");
  put(recipes / "fake-forced.toml", text);
  const auto what = error_of("fake-forced", /*prepare_only=*/true);
  EXPECT_NE(what.find("CONFIG_FORCED_G=y (need n)"), std::string::npos) << what;
}

TEST_F(SourceBuildTest, ConfigRequireIsCheckedBeforeCompiling) {
  recipe("fake-require", "", "[config]\nrequire = [\"SCHED_A\", \"MISSING_Z\"]\n");
  const auto what = error_of("fake-require");
  EXPECT_NE(what.find("fake-require.toml: [config] require"), std::string::npos) << what;
  EXPECT_NE(what.find("CONFIG_MISSING_Z is not set (need y)"), std::string::npos) << what;
  EXPECT_EQ(what.find("SCHED_A"), std::string::npos) << what;
  // Nothing was compiled.
  for (const auto& e : fs::recursive_directory_iterator(cache / "builds"))
    EXPECT_NE(e.path().filename(), "compiled.count") << e.path();
}

TEST_F(SourceBuildTest, CompilerIsInTheHash) {
  recipe("fake-pristine", "");
  build("fake-pristine", cache);
  ASSERT_TRUE(cached_build(load_recipe(recipes, "fake-pristine"), recipes, cache));
  put(dir.path() / "bin/gcc", "#!/bin/sh\necho 'gcc (Other) 99.1.0'\n");
  fs::permissions(dir.path() / "bin/gcc", fs::perms::owner_all);
  const std::string path = ::getenv("PATH");
  ::setenv("PATH", ((dir.path() / "bin").string() + ":" + path).c_str(), 1);
  const bool found_with_other_gcc =
      cached_build(load_recipe(recipes, "fake-pristine"), recipes, cache).has_value();
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_FALSE(found_with_other_gcc);
}

TEST_F(SourceBuildTest, DerivedRecipeInheritsWhatItDoesNotName) {
  recipe("fake-patched", "patches = [\"patches/add-option.patch\"]\n");
  // Names only patches: stays a modules = false source build of the same source, other patches.
  put(recipes / "fake-variant.toml",
      "base = \"fake-patched\"\n[source]\npatches = [\"patches/fuzzy.patch\"]\n");
  const auto v = load_recipe(recipes, "fake-variant");
  EXPECT_EQ(v.kind, SourceKind::kSource);
  EXPECT_FALSE(v.source.loadable_modules);
  ASSERT_EQ(v.source.patches.size(), 1U);
  EXPECT_EQ(v.source.patches[0].filename(), "fuzzy.patch");
  EXPECT_EQ(v.source.version, "1.0");
  // Names every key but modules: modules is still inherited, not reset to true.
  put(recipes / "fake-repin.toml",
      "base = \"fake-patched\"\n[source]\ntype = \"source\"\npackage = \"linux-source-fake\"\n"
      "version = \"1.1\"\nbase_config = \"fake-base\"\n");
  const auto r = load_recipe(recipes, "fake-repin");
  EXPECT_FALSE(r.source.loadable_modules);
  EXPECT_EQ(r.source.version, "1.1");
  ASSERT_EQ(r.source.patches.size(), 1U);
  EXPECT_EQ(r.source.patches[0].filename(), "add-option.patch");
  // An empty list replaces too.
  put(recipes / "fake-nopatch.toml", "base = \"fake-patched\"\n[source]\npatches = []\n");
  EXPECT_TRUE(load_recipe(recipes, "fake-nopatch").source.patches.empty());
}

TEST(ConfigCheck, NegativeRequirementsAcceptEveryWayOfSayingOff) {
  const std::vector<ConfigRequirement> off{{"A", {"n"}}, {"B", {"n"}}, {"C", {"n"}}, {"D", {"n"}}};
  const auto report = check_config(off, "# CONFIG_A is not set\nCONFIG_B=n\nCONFIG_D=y\n");
  ASSERT_EQ(report.findings.size(), 4U);
  EXPECT_TRUE(report.findings[0].ok);
  EXPECT_TRUE(report.findings[1].ok);
  EXPECT_TRUE(report.findings[2].ok);  // absent: off
  EXPECT_FALSE(report.findings[3].ok);
  EXPECT_EQ(report.findings[3].text(), "CONFIG_D=y (need n)");
  EXPECT_FALSE(check_config({{"E", {"y"}}}, "CONFIG_E=n\n").ok());
}

TEST(FirstErrorLine, FindsCompilerMakeAndKconfigErrors) {
  EXPECT_EQ(first_error_line("  CC a.o\nfoo.c:1:2: error: x\nmake: *** [a] Error 1\n"),
            "foo.c:1:2: error: x");
  EXPECT_EQ(first_error_line("  CC a.o\nmake[1]: *** [Makefile:1: b] Error 2\n"),
            "make[1]: *** [Makefile:1: b] Error 2");
  EXPECT_EQ(first_error_line("  CC a.o\n  LD b\n"), std::nullopt);
}

// A real bundle's kernel object (tests/fixtures/exporter/yield-wakeup.json, written by `schedlab run`).
json real_bundle() {
  return json::parse(slurp_file(fs::path(SCHEDLAB_FIXTURES_DIR) / "exporter/yield-wakeup.json"));
}

TEST(BundleIdentity, MatchingBuildIdPasses) {
  const auto b = real_bundle();
  KernelArtifacts k;
  k.build_id = b["kernel"]["build_id"];
  EXPECT_EQ(bundle_identity_mismatch(b, {{"debian-6.12-yield-tail", k}}), std::nullopt);
  k.build_id.clear();  // a packaged kernel: nothing recorded to compare with
  EXPECT_EQ(bundle_identity_mismatch(b, {{"debian-6.12-yield-tail", k}}), std::nullopt);
}

TEST(BundleIdentity, OtherBuildIdOrRecipeFailsNamingBoth) {
  auto b = real_bundle();
  KernelArtifacts k;
  k.build_id = "0123456789abcdef0123456789abcdef01234567";
  k.hash = "feedface";
  const auto why = bundle_identity_mismatch(b, {{"debian-6.12-yield-tail", k}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find(b["kernel"]["build_id"].get<std::string>()), std::string::npos) << *why;
  EXPECT_NE(why->find(k.build_id), std::string::npos) << *why;

  b["kernel"]["booted_by"] = {
      {"recipe", "debian-6.12-source"}, {"label", "6.12-eevdf-source"}, {"accel", "tcg"}};
  const auto other = bundle_identity_mismatch(b, {{"debian-6.12-yield-tail", k}});
  ASSERT_TRUE(other);
  EXPECT_NE(other->find("debian-6.12-source"), std::string::npos) << *other;
  EXPECT_NE(other->find("debian-6.12-yield-tail"), std::string::npos) << *other;

  TempDir dir;
  put(dir.path() / "x.json", b.dump());
  const auto files = bundles_identity_mismatch({dir.path() / "x.json"}, {{"debian-6.12-yield-tail", k}});
  ASSERT_TRUE(files);
  EXPECT_EQ(files->rfind("x.json: ", 0), 0U) << *files;
}

}  // namespace
}  // namespace schedlab::kernels
