#include "core/bundle_io.hpp"

#include <fstream>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/bundle_encoding.hpp"
#include "core/json_cursor.hpp"
#include "core/per_operation.hpp"

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

namespace {

// What a /2 file stores: every repetition without the counters a reader derives identically.
Bundle without_derived_counters(Bundle b) {
  b.schema = kResultSchema;
  auto strip = [](Repetition& rep) {
    std::erase_if(rep.counters, [&rep](const auto& kv) { return is_derived_per_operation(rep, kv.first); });
  };
  for (auto& in : b.instances) {
    if (in.warmup) strip(*in.warmup);
    for (auto& rep : in.repetitions) strip(rep);
    for (auto& rep : in.diagnostics) strip(rep);
  }
  return b;
}

// Indented down to `depth` levels, each deeper value on one line: in a bundle every repetition is one
// line (instances[i].repetitions[r]), so the file stays navigable with a pager while most of its bytes
// are not indentation.
void outline(std::string& out, const nlohmann::json& v, int depth, int max_depth) {
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (depth >= max_depth || !v.is_structured() || v.empty()) {
    out += v.dump(-1, ' ', false, kReplace);
    return;
  }
  const std::string pad(static_cast<std::size_t>(depth) + 1, ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += pad;
    if (v.is_object()) out += nlohmann::json(it.key()).dump(-1, ' ', false, kReplace) + ": ";
    outline(out, *it, depth + 1, max_depth);
  }
  out += "\n" + std::string(static_cast<std::size_t>(depth), ' ') + (v.is_object() ? "}" : "]");
}

constexpr int kOutlineDepth = 4;  // bundle > instances > [i] > repetitions > one line per repetition

}  // namespace

std::string bundle_file_text(const Bundle& bundle) {
  std::string text;
  outline(text, compact_bundle(to_json(without_derived_counters(bundle))), 0, kOutlineDepth);
  return text + "\n";
}

void write_bundle(const std::filesystem::path& path, const Bundle& bundle) {
  std::string text = bundle_file_text(bundle);
  parse_bundle(text, path.string() + " (before writing)");  // never write what we could not read back
  write_file_atomic(path, text, /*replace=*/false);
}

}  // namespace schedlab
