// A kernel recipe someone else wrote. It sits beside links to the built-in recipes and their configs,
// fragments and patches, so that `base = "debian-6.12"` and the shipped files resolve as they would.
#include "fuzz/input_contract.hpp"
#include "kernels/recipe.hpp"

namespace fs = std::filesystem;

namespace {

fs::path recipes_dir() {
  static const fs::path dir = [] {
    const fs::path dir = schedlab::fuzz::scratch_dir() / "recipes";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(SCHEDLAB_SOURCE_DIR "/kernels/recipes"))
      fs::create_symlink(e.path(), dir / e.path().filename());
    return dir;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto file = recipes_dir() / "fuzzed.toml";
  schedlab::fuzz::write_file(file, std::string_view(reinterpret_cast<const char*>(data), size));
  schedlab::fuzz::parsed_or_input_error(file.string(),
                                        [&] { (void)schedlab::kernels::load_recipe_file(file); });
  return 0;
}
