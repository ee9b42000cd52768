// The sched_ext schedulers and their loader where no sched_ext kernel is: the BPF objects as ELF,
// and every refusal the loader makes before it loads anything (against fixture sysfs directories).
// Attaching for real needs a sched_ext kernel (the qemu guest flow, kernels/).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kDir = SCHEDLAB_SCX_DIR;
const char* const kSchedulers[] = {"fifo", "vtime", "broken"};

std::vector<char> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
T read_at(const std::vector<char>& bytes, std::size_t offset) {
  T value{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

struct Section {
  std::string name;
  std::string contents;
};

// The section table of a little-endian ELF64 (what clang -target bpf writes on x86).
std::vector<Section> sections_of(const std::vector<char>& elf) {
  const auto shoff = read_at<std::uint64_t>(elf, 0x28);
  const auto shentsize = read_at<std::uint16_t>(elf, 0x3A);
  const auto shnum = read_at<std::uint16_t>(elf, 0x3C);
  const auto shstrndx = read_at<std::uint16_t>(elf, 0x3E);
  auto header = [&](std::size_t i) { return shoff + i * shentsize; };
  const auto strtab = read_at<std::uint64_t>(elf, header(shstrndx) + 0x18);
  std::vector<Section> sections;
  for (std::size_t i = 0; i < shnum; ++i) {
    const auto name = read_at<std::uint32_t>(elf, header(i));
    const auto offset = read_at<std::uint64_t>(elf, header(i) + 0x18);
    const auto size = read_at<std::uint64_t>(elf, header(i) + 0x20);
    if (strtab + name >= elf.size() || offset + size > elf.size()) continue;
    sections.push_back({std::string(elf.data() + strtab + name), std::string(elf.data() + offset, size)});
  }
  return sections;
}

// This process's own scratch folder: ctest -j runs the other loader tests (each its own process)
// beside this one, and they would read each other's fixtures and output from shared names.
fs::path scratch_dir() {
  const fs::path dir = fs::path(testing::TempDir()) / ("schedulers-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

class RemoveScratchDir : public testing::Environment {
 public:
  void TearDown() override { fs::remove_all(scratch_dir()); }
};
const testing::Environment* const kRemoveScratchDir = testing::AddGlobalTestEnvironment(new RemoveScratchDir);

struct LoaderRun {
  int exit_code = -1;
  std::string out, err;
};

LoaderRun run_loader(const std::string& args) {
  const fs::path out = scratch_dir() / "scx-stdout", err = scratch_dir() / "scx-stderr";
  const std::string command =
      std::string(SCHEDLAB_SCX_LOADER) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(command.c_str());
  LoaderRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const fs::path& p) {
    auto bytes = read_bytes(p);
    return std::string(bytes.begin(), bytes.end());
  };
  run.out = slurp(out);
  run.err = slurp(err);
  return run;
}

// A directory shaped like /sys/kernel/sched_ext.
fs::path fake_sysfs(const std::string& name, const std::string& state, const std::string& root_ops) {
  const fs::path dir = scratch_dir() / ("sched_ext-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "state") << state << "\n";
  std::ofstream(dir / "enable_seq") << "3\n";
  if (!root_ops.empty()) {
    fs::create_directories(dir / "root");
    std::ofstream(dir / "root" / "ops") << root_ops << "\n";
  }
  return dir;
}

TEST(SchedulerObjects, AreBpfElfWithAStructOpsLinkNamedAfterTheFile) {
  for (const char* name : kSchedulers) {
    SCOPED_TRACE(name);
    const auto elf = read_bytes(kDir / (std::string(name) + ".bpf.o"));
    ASSERT_GT(elf.size(), 64u) << "missing or empty";
    EXPECT_EQ(std::string(elf.data(), 4),
              "\x7f"
              "ELF");
    EXPECT_EQ(read_at<std::uint16_t>(elf, 18), 247) << "e_machine is not EM_BPF";
    bool found = false;
    for (const auto& section : sections_of(elf)) {
      if (section.name != ".struct_ops.link") continue;
      found = true;
      // struct sched_ext_ops.name, as the kernel will show it in root/ops.
      EXPECT_NE(section.contents.find(std::string(name) + '\0'), std::string::npos);
    }
    EXPECT_TRUE(found) << "no .struct_ops.link section";
  }
}

TEST(SchedulerObjects, RecordTheExitInfoInTheirOwnSection) {
  for (const char* name : kSchedulers) {
    SCOPED_TRACE(name);
    bool found = false;
    for (const auto& section : sections_of(read_bytes(kDir / (std::string(name) + ".bpf.o")))) {
      found = found || section.name == ".data.schedlab_exit";
    }
    EXPECT_TRUE(found);
  }
}

TEST(Loader, WithoutArgumentsPrintsUsage) {
  const LoaderRun run = run_loader("");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("usage: schedlab-scx"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("\"event\":\"error\""), std::string::npos) << run.out;
}

TEST(Loader, RefusesUnknownOptionsAndExtraArguments) {
  EXPECT_NE(run_loader("--frobnicate x.bpf.o").err.find("unknown option: --frobnicate"), std::string::npos);
  EXPECT_NE(run_loader("a.bpf.o b.bpf.o").err.find("extra argument: b.bpf.o"), std::string::npos);
  const LoaderRun missing = run_loader("x.bpf.o --sysfs");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--sysfs: missing argument"), std::string::npos) << missing.err;
}

TEST(Loader, NamesAMissingObject) {
  const LoaderRun run = run_loader("/nonexistent/fifo.bpf.o");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("/nonexistent/fifo.bpf.o: No such file or directory"), std::string::npos) << run.err;
}

TEST(Loader, NamesTheMissingKernelOption) {
  const LoaderRun run = run_loader("--sysfs /nonexistent/sched_ext " + (kDir / "fifo.bpf.o").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("CONFIG_SCHED_CLASS_EXT"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("/nonexistent/sched_ext: No such file or directory"), std::string::npos) << run.err;
}

TEST(Loader, RefusesWhileAnotherSchedulerIsAttached) {
  const fs::path sysfs = fake_sysfs("busy", "enabled", "other");
  const LoaderRun run = run_loader("--sysfs " + sysfs.string() + " " + (kDir / "fifo.bpf.o").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("already attached (" + (sysfs / "root/ops").string() + " = other, state = enabled)"),
            std::string::npos)
      << run.err;
}

TEST(Loader, RefusesAnElfThatIsNoBpfObject) {
  const fs::path sysfs = fake_sysfs("idle", "disabled", "");
  const LoaderRun run = run_loader("--sysfs " + sysfs.string() + " /bin/true");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("/bin/true: not a BPF object"), std::string::npos) << run.err;
}

TEST(Loader, RefusesABpfObjectWithoutSchedExtOps) {
  const fs::path sysfs = fake_sysfs("idle", "disabled", "");
  const LoaderRun run = run_loader("--sysfs " + sysfs.string() + " " SCHEDLAB_NO_OPS_OBJECT);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("no struct_ops map of type sched_ext_ops"), std::string::npos) << run.err;
}

TEST(Loader, RefusesAnObjectWhoseOpsNameIsNotItsStem) {
  const fs::path sysfs = fake_sysfs("idle", "disabled", "");
  const fs::path renamed = scratch_dir() / "renamed.bpf.o";
  fs::copy_file(kDir / "fifo.bpf.o", renamed, fs::copy_options::overwrite_existing);
  const LoaderRun run = run_loader("--sysfs " + sysfs.string() + " " + renamed.string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("its ops are named 'fifo', expected 'renamed'"), std::string::npos) << run.err;
}

TEST(Loader, RefusesOnThisHostsKernelWhenItHasNoSchedExt) {
  if (fs::exists("/sys/kernel/sched_ext")) GTEST_SKIP() << "this kernel has sched_ext: nothing to refuse";
  const LoaderRun run = run_loader((kDir / "fifo.bpf.o").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): /sys/kernel/sched_ext"),
            std::string::npos)
      << run.err;
}

}  // namespace
