#include "workloads/kernbench/tree_generator.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/host_paths.hpp"
#include "workloads/kernbench/cache_dir.hpp"

namespace schedlab::kernbench {
namespace {

constexpr int kShapeHeaders = 8;
constexpr int kFunctionsPerUnit = 12;

// splitmix64: tiny, fully specified, identical everywhere (std:: distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  unsigned below(unsigned n) { return static_cast<unsigned>(next() % n); }
  unsigned u32() { return static_cast<unsigned>(next() >> 32); }

 private:
  std::uint64_t state_;
};

std::string unit_name(int i, int files) {
  const int width = std::max(3, static_cast<int>(std::to_string(std::max(files - 1, 0)).size()));
  return fmt::format("f{:0{}d}", i, width);
}

std::string common_header() {
  return R"(/* schedlab kernbench generated tree: shared definitions */
#ifndef SL_COMMON_H
#define SL_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SL_WORDS 8u
#define SL_ROUNDS 8u

struct sl_block {
	uint32_t w[SL_WORDS];
	uint64_t tag;
};

static inline uint32_t sl_rotl32(uint32_t v, unsigned r)
{
	return (v << (r & 31u)) | (v >> ((32u - r) & 31u));
}

static inline uint32_t sl_mix(uint32_t a, uint32_t b)
{
	a ^= b;
	a *= 0x85ebca6bu;
	a ^= a >> 13;
	a *= 0xc2b2ae35u;
	return a ^ (a >> 16);
}

static inline uint32_t sl_fold(const struct sl_block *b)
{
	uint32_t acc = (uint32_t)b->tag;
	unsigned i;

	for (i = 0; i < SL_WORDS; i++)
		acc = sl_mix(acc, b->w[i]);
	return acc;
}

#endif
)";
}

std::string shape_header(int k) {
  Rng rng(kTreeSeed * 1000003ULL + 7919ULL * static_cast<std::uint64_t>(k) + 1);
  std::string s = fmt::format(
      "/* schedlab kernbench generated tree: shape {0} */\n#ifndef SL_SHAPE_{0}_H\n#define SL_SHAPE_{0}_H\n\n"
      "#include \"sl_common.h\"\n\nstruct sl_shape_{0} {{\n\tuint32_t a, b;\n\tuint64_t c;\n}};\n",
      k);
  for (int f = 0; f < 6; ++f) {
    s += fmt::format(
        "\nstatic inline uint32_t sl_shape_{}_f{}(uint32_t v)\n{{\n\tv ^= v << {}u;\n\tv *= 0x{:08x}u;\n"
        "\tv ^= v >> {}u;\n\treturn v + 0x{:08x}u;\n}}\n",
        k, f, 1 + rng.below(15), rng.u32() | 1u, 1 + rng.below(20), rng.u32());
  }
  return s + "\n#endif\n";
}

std::string units_header(int files) {
  std::string s =
      "/* schedlab kernbench generated tree: every unit's entry point */\n#ifndef SL_UNITS_H\n"
      "#define SL_UNITS_H\n\n#include <stdint.h>\n\n";
  for (int i = 0; i < files; ++i)
    s += fmt::format("uint32_t {}_entry(uint32_t seed);\n", unit_name(i, files));
  return s + "\n#endif\n";
}

// One case arm of a function's switch.
std::string case_body(Rng& rng, const std::string& u, int shape_a, int shape_b) {
  switch (rng.below(8)) {
    case 0:
      return fmt::format("acc += 0x{:08x}u;", rng.u32());
    case 1:
      return fmt::format("acc ^= sl_rotl32(acc, {}u);", 1 + rng.below(31));
    case 2:
      return fmt::format("acc = acc * 0x{:08x}u + {}_table[i & 15u];", rng.u32() | 1u, u);
    case 3:
      return fmt::format("acc ^= acc >> {}u;", 1 + rng.below(24));
    case 4:
      return fmt::format("acc = sl_mix(acc, b->w[(i + {}u) % SL_WORDS]);", rng.below(8));
    case 5:
      return fmt::format("acc -= x ^ 0x{:08x}u;", rng.u32());
    case 6:
      return fmt::format("acc = sl_shape_{}_f{}(acc);", rng.below(2) ? shape_a : shape_b, rng.below(6));
    default:
      return fmt::format("acc += (uint32_t)(b->tag >> {}u);", rng.below(32));
  }
}

std::string unit_source(int index, int files) {
  Rng rng(kTreeSeed ^ (0x2545f4914f6cdd1dULL * static_cast<std::uint64_t>(index + 1)));
  const std::string u = unit_name(index, files);
  const int shape_a = static_cast<int>(rng.below(kShapeHeaders));
  const int shape_b = (shape_a + 1 + static_cast<int>(rng.below(kShapeHeaders - 1))) % kShapeHeaders;
  std::string s = fmt::format(
      "/* schedlab kernbench generated unit {} (generator {}, seed {}) */\n#include \"sl_common.h\"\n"
      "#include \"sl_shape_{}.h\"\n#include \"sl_shape_{}.h\"\n#include \"sl_units.h\"\n\n"
      "static const uint32_t {}_table[16] = {{\n",
      u, kGeneratorVersion, kTreeSeed, std::min(shape_a, shape_b), std::max(shape_a, shape_b), u);
  for (int row = 0; row < 4; ++row)
    s += fmt::format("\t0x{:08x}u, 0x{:08x}u, 0x{:08x}u, 0x{:08x}u,\n", rng.u32(), rng.u32(), rng.u32(),
                     rng.u32());
  s += "};\n";
  for (int f = 0; f < kFunctionsPerUnit; ++f) {
    s += fmt::format(
        "\nstatic uint32_t {0}_h{1}(uint32_t x, const struct sl_block *b)\n{{\n\tuint32_t acc = 0x{2:08x}u ^ "
        "x;\n"
        "\tunsigned i;\n\n\tfor (i = 0; i < SL_ROUNDS + {3}u; i++) {{\n\t\tacc = sl_mix(acc, b->w[i % "
        "SL_WORDS]);\n"
        "\t\tswitch ((acc >> {4}u) & 7u) {{\n",
        u, f, rng.u32(), rng.below(8), rng.below(29));
    const unsigned cases = 4 + rng.below(4);
    for (unsigned c = 0; c < cases; ++c)
      s += fmt::format("\t\tcase {}:\n\t\t\t{}\n\t\t\tbreak;\n", c, case_body(rng, u, shape_a, shape_b));
    s += fmt::format("\t\tdefault:\n\t\t\t{}\n\t\t\tbreak;\n\t\t}}\n", case_body(rng, u, shape_a, shape_b));
    if (f > 0)
      s += fmt::format("\t\tif ((acc & 0x{:x}u) == 0u)\n\t\t\tacc ^= {}_h{}(acc >> 1, b);\n",
                       0xf0u | rng.below(16), u, rng.below(static_cast<unsigned>(f)));
    s += "\t}\n\treturn acc;\n}\n";
  }
  s += fmt::format(
      "\nuint32_t {0}_entry(uint32_t seed)\n{{\n\tstruct sl_block b;\n\tuint32_t acc = seed;\n\tunsigned "
      "k;\n\n"
      "\tfor (k = 0; k < SL_WORDS; k++)\n\t\tb.w[k] = seed * 0x9e3779b9u + {0}_table[k];\n"
      "\tb.tag = ((uint64_t)seed << 32) | {1}u;\n",
      u, index);
  for (int f = 0; f < kFunctionsPerUnit; ++f) s += fmt::format("\tacc ^= {}_h{}(acc, &b);\n", u, f);
  return s + "\treturn acc ^ sl_fold(&b);\n}\n";
}

std::string main_source(int files) {
  std::string s =
      "/* schedlab kernbench generated tree: calls every unit */\n#include \"sl_common.h\"\n#include "
      "\"sl_units.h\"\n\nint main(void)\n{\n\tuint32_t acc = 1u;\n\n";
  for (int i = 0; i < files; ++i) s += fmt::format("\tacc = {}_entry(acc);\n", unit_name(i, files));
  return s + "\tprintf(\"%08x\\n\", (unsigned)acc);\n\treturn 0;\n}\n";
}

std::string makefile(int files) {
  std::string s = fmt::format(
      "# schedlab kernbench generated tree: {} units (generator {}, seed {})\n"
      "CC = gcc\nCFLAGS = -O2 -g -Wall -Iinclude\n\nHEADERS = include/sl_common.h include/sl_units.h",
      files, kGeneratorVersion, kTreeSeed);
  for (int k = 0; k < kShapeHeaders; ++k) s += fmt::format(" \\\n\tinclude/sl_shape_{}.h", k);
  s += "\n\nOBJS = main.o";
  for (int i = 0; i < files; ++i) s += fmt::format(" \\\n\tsrc/{}.o", unit_name(i, files));
  return s +
         "\n\nprog: $(OBJS)\n\t$(CC) $(CFLAGS) -o $@ $(OBJS)\n\n%.o: %.c $(HEADERS)\n"
         "\t$(CC) $(CFLAGS) -c -o $@ $<\n\nclean:\n\trm -f prog $(OBJS)\n\n.PHONY: clean\n";
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw SystemError("write " + path.string(), errno ? errno : EIO);
}

bool is_build_output(const std::string& rel) {
  return rel == "prog" || (rel.size() > 2 && rel.compare(rel.size() - 2, 2, ".o") == 0);
}

}  // namespace

TreeFiles generate_tree_files(int files) {
  if (files < 1) throw InputError("kernbench.files: must be at least 1");
  TreeFiles t;
  t["Makefile"] = makefile(files);
  t["main.c"] = main_source(files);
  t["include/sl_common.h"] = common_header();
  t["include/sl_units.h"] = units_header(files);
  for (int k = 0; k < kShapeHeaders; ++k) t[fmt::format("include/sl_shape_{}.h", k)] = shape_header(k);
  for (int i = 0; i < files; ++i) t["src/" + unit_name(i, files) + ".c"] = unit_source(i, files);
  return t;
}

std::string tree_content_hash(const TreeFiles& files) {
  std::string all;
  for (const auto& [path, content] : files) {
    all += path;
    all.push_back('\0');
    all += content;
    all.push_back('\0');
  }
  return hex64(fnv1a64(all));
}

std::string tree_content_hash(const std::filesystem::path& dir) {
  TreeFiles files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const auto rel = std::filesystem::relative(e.path(), dir).generic_string();
    if (rel == kManifestName || is_build_output(rel)) continue;
    files[rel] = read_text(e.path()).value_or("");
  }
  return tree_content_hash(files);
}

std::string write_generated_tree(const std::filesystem::path& dir, int files) {
  const auto tree = generate_tree_files(files);
  for (const auto& [path, content] : tree) write_file(dir / path, content);
  const auto hash = tree_content_hash(tree);
  nlohmann::json manifest = {
      {"generator", kGeneratorVersion}, {"seed", kTreeSeed}, {"files", files}, {"content_hash", hash}};
  write_file(dir / kManifestName, manifest.dump(2) + "\n");
  return hash;
}

GeneratedTree ensure_generated_tree(const std::filesystem::path& cache_root, int files) {
  const std::string version_tag =
      hex64(fnv1a64(std::string("generator ") + kGeneratorVersion + " seed " + std::to_string(kTreeSeed)))
          .substr(0, 12);
  GeneratedTree g;
  g.dir = cache_root / fmt::format("generated-{}-{}", files, version_tag);
  g.created =
      publish_directory(g.dir, [&](const std::filesystem::path& tmp) { write_generated_tree(tmp, files); });
  auto manifest_text = read_text(g.dir / kManifestName);
  nlohmann::json manifest = nlohmann::json::parse(manifest_text.value_or(""), nullptr, false);
  if (!manifest.is_object() || !manifest.contains("content_hash"))
    throw Error("generated tree " + g.dir.string() + " has no readable " + kManifestName +
                "; it was not made by schedlab: remove it");
  g.content_hash = manifest.at("content_hash").get<std::string>();
  return g;
}

}  // namespace schedlab::kernbench
