// `schedlab diff A B`: each side a bundle file, a directory of bundles, or a label or configuration hash
// looked up in a store directory. The input's first line is a side's specification; the rest is a
// (damaged, foreign) bundle written into the store beside a real one and into a side directory of
// its own. Specifications outside the scratch directory (absolute, `..`) are skipped: walking the host's
// file system is what such a command asks for, not a fault of the parser.
#include "diff/sides.hpp"
#include "fuzz/input_contract.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch() {
  static const fs::path dir = [] {
    const fs::path dir = schedlab::fuzz::scratch_dir();
    fs::create_directories(dir / "store");
    fs::create_directories(dir / "side");
    const fs::path fixture =
        SCHEDLAB_SOURCE_DIR "/tests/fixtures/qemu-6.1-vs-6.12/6.1-cfs/20261204T170921Z-c56789-trial1.json";
    fs::copy_file(fixture, dir / "store" / fixture.filename());
    fs::current_path(dir);
    return dir;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const fs::path& dir = scratch();
  const std::string input = schedlab::fuzz::as_text(data, size);
  const auto newline = input.find('\n');
  const std::string spec = input.substr(0, newline);
  const std::string bundle = newline == std::string::npos ? "" : input.substr(newline + 1);
  schedlab::fuzz::write_file(dir / "store" / "fuzzed.json", bundle);
  schedlab::fuzz::write_file(dir / "side" / "fuzzed.json", bundle);

  std::vector<schedlab::Side> sides;
  schedlab::fuzz::parsed_or_input_error("side",
                                        [&] { sides.push_back(schedlab::load_side("side", "store")); });
  if (!spec.empty() && spec.front() != '/' && spec.find("..") == std::string::npos &&
      spec.find('\0') == std::string::npos) {
    schedlab::fuzz::parsed_or_input_error(spec, [&] { sides.push_back(schedlab::load_side(spec, "store")); });
  }
  schedlab::name_sides(sides);
  return 0;
}
