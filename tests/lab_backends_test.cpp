// The lab backends (kexec, grub) staged for real against a fixture tree (proc, boot, etc under a temp
// root) with fake kexec, grub-reboot, grub-editenv, apt-get, systemctl and reboot scripts first on
// PATH, and resumed after a "reboot" that is a new boot id and a new /proc/cmdline. Issue #31 items 3,
// 4, 14 and 15: a fallback boot of the same release is not `ok`, a kexec from a kexec'd kernel does not
// inherit its recipe's arguments, the box's default boot is left as found, a failed staging leaves no
// state, and a crash during the suite is recorded as one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"
#include "kernels/boot_backend.hpp"
#include "kernels/lab_backends.hpp"
#include "kernels/recipe.hpp"
#include "test_util.hpp"

namespace schedlab::kernels {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

const fs::path kRecipes = SCHEDLAB_SOURCE_DIR "/kernels/recipes";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// The shape Debian's /etc/grub.d (00_header, 10_linux, 41_custom) writes, abridged: entry 0 loads the
// newest kernel, the submenu has an entry per kernel.
std::string grub_cfg(const std::vector<std::string>& releases_newest_first) {
  std::string cfg =
      "if [ -s $prefix/grubenv ]; then\n  load_env\nfi\nif [ \"${next_entry}\" ] ; then\n"
      "   set default=\"${next_entry}\"\n   set next_entry=\n   save_env next_entry\nelse\n"
      "   set default=\"${saved_entry}\"\nfi\n"
      "menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-u' {\n"
      "\tinsmod ext2\n\tsearch --no-floppy --fs-uuid --set=root u\n"
      "\tlinux\t/boot/vmlinuz-" +
      releases_newest_first.front() + " root=UUID=u ro quiet\n\tinitrd\t/boot/initrd.img-" +
      releases_newest_first.front() +
      "\n}\nsubmenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-u' {\n";
  for (const auto& r : releases_newest_first)
    cfg += "\tmenuentry 'Debian GNU/Linux, with Linux " + r +
           "' --class debian $menuentry_id_option 'gnulinux-" + r +
           "-advanced-u' {\n\t\tinsmod ext2\n\t\tlinux\t/boot/vmlinuz-" + r +
           " root=UUID=u ro quiet\n\t\tinitrd\t/boot/initrd.img-" + r + "\n\t}\n";
  cfg +=
      "}\n### BEGIN /etc/grub.d/41_custom ###\nif [ -f  ${config_directory}/custom.cfg ]; then\n"
      "  source ${config_directory}/custom.cfg\nfi\n### END /etc/grub.d/41_custom ###\n";
  return cfg;
}

constexpr const char* kOld = "6.1.0-40-amd64";  // what the box runs and boots by default
constexpr const char* kNew = "6.1.0-50-amd64";  // debian-6.1's pin: the kernel under test

// A box: the fixture tree, and the fake tools, first on PATH for this test's life.
class LabBox : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "staging for real needs root (it checks before it reboots)";
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    const auto root = dir_.path();
    env_ = {HostPaths::under(root), root / "etc", root / "run"};
    write(root / "proc/sys/kernel/random/boot_id", "boot-1\n");
    write(root / "proc/sys/kernel/osrelease", std::string(kOld) + "\n");
    write(root / "proc/cmdline", std::string("BOOT_IMAGE=/boot/vmlinuz-") + kOld + " root=UUID=u ro quiet\n");
    write(root / "boot/grub/grub.cfg", grub_cfg({kOld}));
    write(root / "boot/grub/grubenv", "# GRUB Environment Block\n");
    write(root / ("boot/vmlinuz-" + std::string(kOld)), "");
    write(root / "etc/default/grub", "GRUB_DEFAULT=saved\nGRUB_TIMEOUT=5\n");
    // What installing debian-6.1's package does to the box: its kernel, and update-grub's menu with
    // the newest kernel first (entry 0).
    write(root / "after-install.cfg", grub_cfg({kNew, kOld}));
    const auto bin = root / "bin";
    const std::string log = (root / "tools.log").string();
    auto tool = [&](const std::string& name, const std::string& body) {
      write(bin / name, "#!/bin/sh\necho \"" + name + " $*\" >> '" + log + "'\n" + body + "\nexit $(cat '" +
                            (root / "rc").string() + "/" + name + "' 2>/dev/null || echo 0)\n");
      fs::permissions(bin / name, fs::perms::owner_all);
    };
    const std::string editenv =
        "f=$1; op=$2; shift 2\nfor kv in \"$@\"; do k=${kv%%=*}; grep -v \"^$k=\" \"$f\" > \"$f.new\"; "
        "mv \"$f.new\" \"$f\"; [ \"$op\" = set ] && echo \"$kv\" >> \"$f\"; done";
    tool("grub-editenv", editenv);
    tool("grub-reboot",
         "set -- '" + (root / "boot/grub/grubenv").string() + "' set \"next_entry=$1\"\n" + editenv);
    tool("apt-get", "[ -f '" + (root / "rc/apt-get").string() + "' ] && exit 100\ncp '" +
                        (root / "after-install.cfg").string() + "' '" +
                        (root / "boot/grub/grub.cfg").string() + "'\n: > '" +
                        (root / "boot/vmlinuz-").string() + kNew + "'");
    tool("kexec", "");
    tool("systemctl", "");
    tool("reboot", "");
    tool("sync", "");
    ::setenv("PATH", (bin.string() + ":" + old_path_).c_str(), 1);
  }
  void TearDown() override {
    if (!old_path_.empty()) ::setenv("PATH", old_path_.c_str(), 1);
  }

  void fail(const std::string& tool) { write(dir_.path() / "rc" / tool, "1\n"); }
  std::string tools_log() const { return read_text(dir_.path() / "tools.log").value_or(""); }
  std::string grubenv() const { return read_text(dir_.path() / "boot/grub/grubenv").value_or(""); }
  fs::path state() const { return dir_.path() / "var/boot-state.json"; }

  BootRequest request(const std::string& recipe = "debian-6.1") const {
    BootRequest req;
    req.recipe = load_recipe(kRecipes, recipe);
    const auto& p = req.recipe.package;
    req.kernel = {p.package, p.version, p.release, {}, {}, {}, {}, {}};
    req.run_args = {"run", "--workload", "yield"};
    req.out_dir = dir_.path() / "out";
    req.schedlab_binary = "/x/schedlab";
    req.state_file = state();
    return req;
  }

  // The reboot: another boot id, the kernel that came up, and the command line it came up with.
  void reboot_into(const std::string& release, const std::string& cmdline) {
    write(dir_.path() / "proc/sys/kernel/random/boot_id", "boot-" + std::to_string(++boots_) + "x\n");
    write(dir_.path() / "proc/sys/kernel/osrelease", release + "\n");
    write(dir_.path() / "proc/cmdline", cmdline + "\n");
  }

  // The --append the fake kexec -l was given: the command line the kexec'd kernel gets.
  std::string kexec_append() const {
    const auto log = tools_log();
    const auto at = log.find("--append=");
    if (at == std::string::npos) return "";
    return log.substr(at + 9, log.find('\n', at) - at - 9);
  }

  TempDir dir_;
  LabEnvironment env_;
  std::string old_path_;
  int boots_ = 1;
};

int suite_ok(const std::vector<std::string>&) {
  return 0;
}

// Item 3: resume checks the boot, not only the release. A kexec that fell back to a reboot (or a grub
// fallback) into the same release has no marker and no recipe arguments on /proc/cmdline.
TEST_F(LabBox, ResumeRecordsAFallbackBootOfTheSameReleaseAsBootFailed) {
  std::ostringstream log;
  auto r = make_kexec_backend(env_)->boot(request(), log);
  ASSERT_EQ(r.status, "staged") << log.str();
  const auto staged = *read_text(state());
  const std::string appended = kexec_append();
  EXPECT_EQ(appended, "root=UUID=u ro quiet schedlab.recipe=debian-6.1 schedlab.label=6.1-cfs loglevel=5");

  // The kexec did not happen; the box rebooted into the same release through its own entry.
  reboot_into(kNew, std::string("BOOT_IMAGE=/boot/vmlinuz-") + kNew + " root=UUID=u ro quiet");
  int runs = 0;
  auto o = resume_boot(state(), env_, [&](const std::vector<std::string>&) { return ++runs, 0; });
  EXPECT_EQ(o.status, "boot-failed");
  EXPECT_NE(o.reason.find("lacks `schedlab.recipe=debian-6.1 schedlab.label=6.1-cfs loglevel=5`"),
            std::string::npos)
      << o.reason;
  EXPECT_EQ(runs, 0);

  // The boot that was staged: the kernel runs with exactly what kexec -l was given.
  write(state(), staged);
  reboot_into(kNew, appended);
  o = resume_boot(state(), env_, [&](const std::vector<std::string>&) { return ++runs, 0; });
  EXPECT_EQ(o.status, "ok") << o.reason;
  EXPECT_EQ(runs, 1);
}

// Item 3: the grub backend carries the recipe's arguments and its marker, in a one-shot copy of the
// release's entry in custom.cfg (sourced at boot by 41_custom's block in grub.cfg).
TEST_F(LabBox, GrubBootsAOneShotEntryCarryingTheRecipesArguments) {
  write(dir_.path() / ("boot/vmlinuz-" + std::string(kNew)), "");
  // GRUB_SAVEDEFAULT=true: 10_linux puts savedefault in every entry.
  auto saving = grub_cfg({kNew, kOld});
  for (std::size_t at = 0; (at = saving.find("\tinsmod ext2\n", at)) != std::string::npos; at += 20)
    saving.insert(at, "\tsavedefault\n");
  write(dir_.path() / "boot/grub/grub.cfg", saving);
  write(dir_.path() / "boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-u>gnulinux-" + std::string(kOld) +
            "-advanced-u\n");
  auto req = request();
  req.append = "mitigations=off";
  std::ostringstream log;
  auto r = make_grub_backend(env_)->boot(req, log);
  ASSERT_EQ(r.status, "staged") << log.str();
  const auto custom = read_text(dir_.path() / "boot/grub/custom.cfg").value_or("");
  EXPECT_NE(custom.find("menuentry 'schedlab debian-6.1 (Linux 6.1.0-50-amd64)' --id schedlab-once {\n"),
            std::string::npos)
      << custom;
  EXPECT_NE(
      custom.find("\tlinux\t/boot/vmlinuz-6.1.0-50-amd64 root=UUID=u ro quiet schedlab.recipe=debian-6.1 "
                  "schedlab.label=6.1-cfs loglevel=5 mitigations=off\n"),
      std::string::npos)
      << custom;
  EXPECT_NE(custom.find("\tinitrd\t/boot/initrd.img-6.1.0-50-amd64\n"), std::string::npos) << custom;
  EXPECT_EQ(custom.find("savedefault"), std::string::npos)
      << "the one-shot entry must not become the default";
  EXPECT_NE(grubenv().find("next_entry=schedlab-once\n"), std::string::npos) << grubenv();
  EXPECT_NE(tools_log().find("reboot \n"), std::string::npos) << tools_log();

  reboot_into(kNew, std::string("BOOT_IMAGE=/boot/vmlinuz-") + kNew +
                        " root=UUID=u ro quiet schedlab.recipe=debian-6.1 schedlab.label=6.1-cfs loglevel=5 "
                        "mitigations=off");
  // Whatever the boot changed in the saved default (a savedefault the box's grub ran), resume puts back.
  write(dir_.path() / "boot/grub/grubenv", "# GRUB Environment Block\nsaved_entry=schedlab-once\n");
  auto o = resume_boot(state(), env_, suite_ok);
  EXPECT_EQ(o.status, "ok") << o.reason;
  EXPECT_FALSE(fs::exists(dir_.path() / "boot/grub/custom.cfg")) << "the one-shot entry served once";
  EXPECT_NE(grubenv().find("saved_entry=gnulinux-advanced-u>gnulinux-6.1.0-40-amd64-advanced-u\n"),
            std::string::npos)
      << grubenv();
  EXPECT_EQ(nlohmann::json::parse(*read_text(o.record))["default_boot"],
            "the default boot is vmlinuz-6.1.0-40-amd64 "
            "(gnulinux-advanced-u>gnulinux-6.1.0-40-amd64-advanced-u) by "
            "GRUB_DEFAULT=saved saved_entry=gnulinux-advanced-u>gnulinux-6.1.0-40-amd64-advanced-u");

  // A grub.cfg without 41_custom's block cannot carry them: refused, not silently dropped.
  auto cfg = grub_cfg({kNew, kOld});
  write(dir_.path() / "boot/grub/grub.cfg", cfg.substr(0, cfg.find("### BEGIN /etc/grub.d/41_custom")));
  EXPECT_NE(error_of([&] { make_grub_backend(env_)->boot(req, log); }).find("does not source custom.cfg"),
            std::string::npos);
  // Nor is the box's own custom.cfg replaced.
  write(dir_.path() / "boot/grub/grub.cfg", cfg);
  write(dir_.path() / "boot/grub/custom.cfg", "menuentry 'memtest' {\n}\n");
  EXPECT_NE(error_of([&] { make_grub_backend(env_)->boot(req, log); }).find("will not replace it"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(state()));
}

// Item 4: staged from a kexec'd kernel, the next kernel gets the box's own arguments and the new
// recipe's, none of the previous recipe's (its preempt=full, its marker, its --append).
TEST(LabCmdline, AKexecFromAKexecdKernelDropsThePreviousBootsArguments) {
  auto first = load_recipe(kRecipes, "debian-6.1-rt");
  first.cmdline = "preempt=full threadirqs";
  const auto second = load_recipe(kRecipes, "debian-6.12");
  const std::string box = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-40-amd64 root=UUID=u ro console=ttyS0";
  const auto kexecd = kexec_cmdline(box, first, "mitigations=off");
  EXPECT_NE(kexecd.find("preempt=full"), std::string::npos) << kexecd;
  EXPECT_EQ(kexec_cmdline(kexecd, second, ""), kexec_cmdline(box, second, ""));
  EXPECT_EQ(kexec_cmdline(kexecd, second, ""),
            "root=UUID=u ro console=ttyS0 schedlab.recipe=debian-6.12 schedlab.label=6.12-eevdf loglevel=5");
  // Booted by the grub backend's one-shot entry: the same additions, after the entry's own arguments.
  EXPECT_EQ(kexec_cmdline("BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=u ro quiet " +
                              lab_boot_args(first, "nosmt"),
                          second, ""),
            "root=UUID=u ro quiet schedlab.recipe=debian-6.12 schedlab.label=6.12-eevdf loglevel=5");
}

// Item 14: GRUB_DEFAULT as grub-mkconfig sees it (grub.d drop-ins after /etc/default/grub) and
// grubenv's saved_entry name the default boot.
TEST_F(LabBox, TheDefaultBootIsReadFromGrubDAndSavedEntry) {
  write(dir_.path() / "boot/grub/grub.cfg", grub_cfg({kNew, kOld}));
  write(dir_.path() / "etc/default/grub", "GRUB_DEFAULT=0\n");
  auto d = default_boot(env_);
  EXPECT_EQ(d.grub_default, "0");
  EXPECT_EQ(d.release, kNew);
  write(dir_.path() / "etc/default/grub.d/50-lab.cfg", "GRUB_DEFAULT=\"saved\"\n");
  write(dir_.path() / "boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=Advanced options for Debian GNU/Linux>Debian GNU/Linux, with "
        "Linux 6.1.0-40-amd64\n");
  d = default_boot(env_);
  EXPECT_EQ(d.grub_default, "saved");
  EXPECT_EQ(d.release, kOld) << d.describe();
  EXPECT_EQ(d.entry, "gnulinux-advanced-u>gnulinux-6.1.0-40-amd64-advanced-u");
  write(dir_.path() / "boot/grub/grubenv", "# GRUB Environment Block\nsaved_entry=1>1\n");
  EXPECT_EQ(default_boot(env_).release, kOld);
  // The grub backend's check reads the drop-in too: no refusal for a GRUB_DEFAULT=saved set there.
  write(dir_.path() / ("boot/vmlinuz-" + std::string(kNew)), "");
  std::ostringstream log;
  auto req = request();
  req.dry_run = true;
  make_grub_backend(env_)->boot(req, log);
  EXPECT_EQ(log.str().find("GRUB_DEFAULT is"), std::string::npos) << log.str();
}

// Item 14: the install under GRUB_DEFAULT=saved with no saved_entry makes the new kernel entry 0, the
// default; the staging puts the default back (saved_entry = the old kernel's entry) and checks it.
TEST_F(LabBox, TheInstallLeavesTheDefaultBootAsFound) {
  std::ostringstream log;
  auto r = make_kexec_backend(env_)->boot(request(), log);
  ASSERT_EQ(r.status, "staged") << log.str();
  EXPECT_NE(tools_log().find("apt-get install"), std::string::npos) << tools_log();
  EXPECT_NE(grubenv().find("saved_entry=gnulinux-advanced-u>gnulinux-6.1.0-40-amd64-advanced-u\n"),
            std::string::npos)
      << grubenv() << log.str();
  EXPECT_EQ(default_boot(env_).release, kOld);
  const auto state_json = nlohmann::json::parse(*read_text(state()));
  EXPECT_EQ(state_json["default_boot_before"]["release"], kOld);
  const auto log_text = tools_log();
  EXPECT_LT(log_text.find("grub-editenv"), log_text.find("kexec -l"))
      << "checked before the kernel is loaded";
}

// Item 14: under a positional GRUB_DEFAULT=0 the changed default cannot be put back by grubenv: the
// staging fails before anything is loaded, saying so, and leaves no state.
TEST_F(LabBox, AnInstallThatMovesAPositionalDefaultFailsTheStaging) {
  write(dir_.path() / "etc/default/grub", "GRUB_DEFAULT=0\n");
  std::ostringstream log;
  const auto error = error_of([&] { make_kexec_backend(env_)->boot(request(), log); });
  EXPECT_NE(error.find("the box's default boot changed from vmlinuz-6.1.0-40-amd64 (gnulinux-simple-u) by "
                       "GRUB_DEFAULT=0 to vmlinuz-6.1.0-50-amd64"),
            std::string::npos)
      << error;
  EXPECT_EQ(tools_log().find("kexec -l"), std::string::npos) << tools_log();
  EXPECT_FALSE(fs::exists(state()));
}

// Items 14 and 15: a reboot that fails after grub-reboot leaves neither next_entry (the next reboot
// for any reason would boot the kernel under test) nor the one-shot entry nor the state file.
TEST_F(LabBox, AFailedRebootClearsNextEntryAndTheState) {
  fail("reboot");
  std::ostringstream log;
  const auto error = error_of([&] { make_grub_backend(env_)->boot(request(), log); });
  EXPECT_NE(error.find("staging failed: "), std::string::npos) << error;
  EXPECT_NE(error.find("cleared next_entry"), std::string::npos) << error;
  EXPECT_NE(tools_log().find("grub-reboot schedlab-once"), std::string::npos) << tools_log();
  EXPECT_EQ(grubenv().find("next_entry="), std::string::npos) << grubenv();
  EXPECT_FALSE(fs::exists(dir_.path() / "boot/grub/custom.cfg"));
  EXPECT_EQ(default_boot(env_).release, kOld);
  EXPECT_FALSE(fs::exists(state())) << "nothing may resume a boot that never happened";
}

// Item 15: a kexec -l that refuses the kernel fails the staging; its state file goes, so a later
// `kernel resume` has nothing to act on.
TEST_F(LabBox, AFailedStagingRemovesItsStateFile) {
  fail("kexec");
  std::ostringstream log;
  const auto error = error_of([&] { make_kexec_backend(env_)->boot(request(), log); });
  EXPECT_NE(error.find("staging failed: "), std::string::npos) << error;
  EXPECT_NE(error.find("removed " + state().string()), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(state()));
  EXPECT_EQ(default_boot(env_).release, kOld) << "the install's change to the default is put back";
  reboot_into(kOld, "root=UUID=u ro quiet");
  EXPECT_NE(error_of([&] { resume_boot(state(), env_, suite_ok); }).find("no boot state"), std::string::npos);
}

// Item 15: the machine going down during the suite (a crash, a hang and a watchdog reset) brings the
// box back in its default kernel; the next resume records the crash, not a kernel that did not come up.
TEST_F(LabBox, AResumeAfterACrashDuringTheSuiteSaysSo) {
  std::ostringstream log;
  ASSERT_EQ(make_kexec_backend(env_)->boot(request(), log).status, "staged") << log.str();
  reboot_into(kNew, kexec_append());
  struct Crash {};
  EXPECT_THROW(resume_boot(state(), env_, [](const std::vector<std::string>&) -> int { throw Crash{}; }),
               Crash);
  ASSERT_TRUE(fs::exists(state()));
  // Another resume in the same boot: the first one may still be running.
  EXPECT_NE(error_of([&] { resume_boot(state(), env_, suite_ok); }).find("its resume began in this boot"),
            std::string::npos);
  reboot_into(kOld, std::string("BOOT_IMAGE=/boot/vmlinuz-") + kOld + " root=UUID=u ro quiet");
  int runs = 0;
  auto o = resume_boot(state(), env_, [&](const std::vector<std::string>&) { return ++runs, 0; });
  EXPECT_EQ(o.status, "failed");
  EXPECT_NE(o.reason.find("crashed during the suite"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("running 6.1.0-50-amd64"), std::string::npos) << o.reason;
  EXPECT_EQ(o.reason.find("did not come up"), std::string::npos) << o.reason;
  EXPECT_EQ(runs, 0);
  EXPECT_FALSE(fs::exists(state()));
}

// Item 15 through the binary: plain `schedlab kernel resume` (no daemon, no marker of its own) on a
// state whose resume began in another boot records the crash and exits 1.
TEST(LabResumeCli, APlainResumeAfterACrashSaysCrashedDuringTheSuite) {
  TempDir dir;
  const auto state = dir.path() / "boot-state.json";
  const nlohmann::json staged = {
      {"schema", "schedlab.boot-state/1"},
      {"backend", "kexec"},
      {"recipe", {{"name", "debian-6.1"}, {"label", "6.1-cfs"}}},
      {"kernel", {{"release", "6.1.0-50-amd64"}}},
      {"run_args", {"run", "--workload", "yield"}},
      {"out_dir", (dir.path() / "out").string()},
      {"schedlab", SCHEDLAB_BINARY},
      {"staged_at", "2026-12-01T02:00:00Z"},
      {"boot_id_before", "00000000-0000-4000-8000-000000000001"},
      {"expected_cmdline", "schedlab.recipe=debian-6.1 schedlab.label=6.1-cfs loglevel=5"},
      {"resume_started",
       {{"boot_id", "00000000-0000-4000-8000-000000000002"},
        {"at", "2026-12-01T02:01:00Z"},
        {"release", "6.1.0-50-amd64"}}}};
  write(state, staged.dump(2));
  const auto o = testing::schedlab("kernel resume --state-file " + state.string());
  EXPECT_EQ(o.code, 1) << o.out;
  EXPECT_NE(
      o.out.find(": failed — crashed during the suite: the resume began at 2026-12-01T02:01:00Z in boot "
                 "00000000-0000-4000-8000-000000000002 running 6.1.0-50-amd64"),
      std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("did not come up"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(state));
}

}  // namespace
}  // namespace schedlab::kernels
