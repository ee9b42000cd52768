#include "core/bundle_io.hpp"

#include <fstream>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/json_cursor.hpp"

namespace schedlab {

Bundle parse_bundle(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = text.empty() ? "empty file" : "not valid JSON (truncated?)";
    throw BundleError(source + ": " + what + " at byte " + std::to_string(e.byte) + ": " + e.what());
  }
  return bundle_from_json(j, source);
}

Bundle load_bundle(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BundleError(path.string() + ": cannot open for reading");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_bundle(ss.str(), path.string());
}

void write_bundle(const std::filesystem::path& path, const Bundle& bundle) {
  std::string text = to_json(bundle).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  parse_bundle(text, path.string() + " (before writing)");  // never write what we could not read back
  write_file_atomic(path, text, /*replace=*/false);
}

}  // namespace schedlab
