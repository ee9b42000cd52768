#include "workloads/sdet/script_set.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace schedlab::sdet {
namespace {

namespace fs = std::filesystem;

// splitmix64: small, fast, and fully specified, so orders and data are the same everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (the modulo bias is below 2^-50 for the small n used here).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::size_t>(hi - lo + 1))); }

 private:
  std::uint64_t state_;
};

constexpr std::uint64_t kDataSeed = 7;

bool valid_name(const std::string& name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error("cannot write " + path.string());
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
}

std::vector<std::string> vocabulary(Rng& rng) {
  static const char* const kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa",
                                           "de", "fi", "go", "hu", "ja", "be", "co", "la", "mo", "ri"};
  std::set<std::string> words;
  for (int i = 0; i < 400; ++i) {
    std::string w;
    for (int s = rng.between(1, 3); s > 0; --s) w += kSyllables[rng.below(std::size(kSyllables))];
    words.insert(w);
  }
  return {words.begin(), words.end()};
}

}  // namespace

std::vector<Script> script_set(const fs::path& extra_dir) {
  std::vector<Script> set = bundled_scripts();
  if (extra_dir.empty()) return set;
  const std::string key = "sdet.script_dir: ";
  std::error_code ec;
  if (!fs::is_directory(extra_dir, ec)) throw InputError(key + extra_dir.string() + " is not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(extra_dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  if (ec) throw InputError(key + "cannot read " + extra_dir.string() + ": " + ec.message());
  if (files.empty()) throw InputError(key + extra_dir.string() + " holds no script (regular file)");
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto name = f.filename().string();
    if (!valid_name(name))
      throw InputError(key + "'" + name + "': a script's name may hold only letters, digits, '.', '_', '-'");
    if (std::any_of(set.begin(), set.end(), [&](const Script& s) { return s.name == name; }))
      throw InputError(key + "'" + name + "' has the name of a bundled script");
    std::ifstream in(f, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (!in && !in.eof()) throw InputError(key + "cannot read " + f.string());
    set.push_back({name, std::move(text)});
  }
  return set;
}

std::string script_set_hash(const std::vector<Script>& scripts) {
  std::string all;
  for (const auto& s : scripts) all += s.name + '\0' + s.text + '\0';
  return hex64(fnv1a64(all));
}

std::vector<std::size_t> user_order(std::uint64_t seed, int user, std::size_t set_size, std::size_t count) {
  Rng rng(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(user) + 1);
  std::vector<std::size_t> out, deck(set_size);
  out.reserve(count);
  while (out.size() < count) {
    for (std::size_t i = 0; i < set_size; ++i) deck[i] = i;
    for (std::size_t i = set_size; i > 1; --i) std::swap(deck[i - 1], deck[rng.below(i)]);
    for (std::size_t i = 0; i < set_size && out.size() < count; ++i) out.push_back(deck[i]);
  }
  return out;
}

std::vector<DataFile> data_files() {
  Rng rng(kDataSeed);
  const auto words = vocabulary(rng);
  const auto word = [&] { return words[rng.below(words.size())]; };
  std::vector<DataFile> files;
  for (int c = 0; c < 8; ++c) {
    std::string text;
    for (int line = 0; line < 300; ++line) {
      for (int w = rng.between(6, 12); w > 0; --w) text += word() + (w > 1 ? " " : "\n");
    }
    files.push_back({fs::path("text") / fmt::format("chapter-{:02d}.txt", c), std::move(text)});
  }
  for (const std::string d : {"core", "io", "net", "util"}) {
    for (int i = 0; i < 6; ++i) {
      std::string text = fmt::format("#include \"{}.h\"\n\n", d);
      for (int fn = 0; fn < 8; ++fn) {
        const auto stem = d + "_" + word();
        text += fmt::format(
            "int {0}_{1}(int x)\n{{\n\tint y = x * {2};\n\tif (y > {3})\n\t\treturn {0}_helper(y);\n"
            "\treturn y + {4};\n}}\n\n",
            stem, fn, rng.between(2, 99), rng.between(100, 999), rng.between(1, 9));
      }
      files.push_back({fs::path("src") / d / fmt::format("{}{}.c", d, i), std::move(text)});
    }
    std::string upper = d;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](char ch) { return ch - 'a' + 'A'; });
    files.push_back({fs::path("src") / d / (d + ".h"),
                     fmt::format("#ifndef {0}_H\n#define {0}_H\nint {1}_init(void);\n#endif\n", upper, d)});
  }
  std::string table;
  for (int i = 0; i < 500; ++i)
    table += fmt::format("{:04d},{},d{},{}\n", i, word(), rng.between(0, 9), rng.between(1, 10000));
  files.push_back({"table.csv", std::move(table)});
  std::string depts;
  for (int i = 0; i < 10; ++i) depts += fmt::format("d{},{}\n", i, word());
  files.push_back({"depts.csv", std::move(depts)});
  return files;
}

std::string data_hash(const std::vector<DataFile>& files) {
  std::string all;
  for (const auto& f : files) all += f.path.string() + '\0' + f.text + '\0';
  return hex64(fnv1a64(all));
}

void write_data(const fs::path& dir, const std::vector<DataFile>& files) {
  for (const auto& f : files) {
    make_dirs((dir / f.path).parent_path());
    write_file(dir / f.path, f.text);
  }
}

void write_scripts(const fs::path& dir, const std::vector<Script>& scripts) {
  make_dirs(dir);
  for (const auto& s : scripts) write_file(dir / s.name, s.text);
}

}  // namespace schedlab::sdet
