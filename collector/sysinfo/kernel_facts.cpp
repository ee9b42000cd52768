// The kernel's identity and the scheduler configuration under test, read through HostPaths.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "collector/sysinfo/sysinfo.hpp"
#include "core/cmdline_word.hpp"
#include "core/hash.hpp"

namespace schedlab::sysinfo_detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using KernelConfig = std::map<std::string, std::string, std::less<>>;

// What the scheduler reports itself as when a BPF scheduler is attached (DESIGN.md spells it "scx:").
constexpr const char* kSchedExtPrefix = "scx:";

// debugfs files under sched/ that are tunables rather than statistics or dumps.
constexpr const char* kDebugfsTunables[] = {
    "base_slice_ns",       "latency_ns", "min_granularity_ns", "wakeup_granularity_ns",
    "migration_cost_nsec", "nr_migrate", "tunable_scaling",    "preempt"};

// Static preemption models in the order Kconfig makes them exclusive; the first one set wins.
struct PreemptModel {
  const char* config;  // symbol in /boot/config-*
  const char* model;
};
constexpr PreemptModel kPreemptModels[] = {{"CONFIG_PREEMPT_LAZY", "lazy"},
                                           {"CONFIG_PREEMPT", "full"},
                                           {"CONFIG_PREEMPT_VOLUNTARY", "voluntary"},
                                           {"CONFIG_PREEMPT_NONE", "none"}};

// Words of `uname -v` ("#1 SMP PREEMPT_DYNAMIC ...") that name a static model; none/voluntary leave no word.
struct VersionWord {
  const char* word;
  const char* model;
};
constexpr VersionWord kVersionWords[] = {{"PREEMPT_RT", "rt"}, {"PREEMPT_LAZY", "lazy"}, {"PREEMPT", "full"}};

json or_null(const std::optional<std::string>& s) {
  return s ? json(*s) : json(nullptr);
}

std::optional<long> to_long(std::string_view s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// "CONFIG_HZ=250" lines of a kernel config; "# CONFIG_X is not set" lines are left out.
KernelConfig parse_config(const std::string& text) {
  KernelConfig out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (line.rfind("CONFIG_", 0) != 0 || eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

bool config_yes(const KernelConfig& config, std::string_view key) {
  auto it = config.find(key);
  return it != config.end() && it->second == "y";
}

// Name -> trimmed content of the regular files in `dir` whose name starts with `prefix`
// (null for an unreadable file); null when the directory cannot be listed.
json files_in(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return nullptr;
  json out = json::object();
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto name = it->path().filename().string();
    std::error_code type_ec;
    if (name.rfind(prefix, 0) != 0 || !it->is_regular_file(type_ec)) continue;
    auto text = read_text(it->path());
    out[name] = text ? json(trim(*text)) : json(nullptr);
  }
  return out;
}

// The mode a PREEMPT_DYNAMIC kernel runs in: debugfs shows "none voluntary (full) lazy" and is
// current even after a runtime switch; otherwise preempt= on the cmdline chose it at boot.
std::optional<std::string> dynamic_mode(const HostPaths& paths, const std::optional<std::string>& cmdline) {
  if (auto line = read_trimmed(paths.sys / "kernel/debug/sched/preempt")) {
    auto open = line->find('('), close = line->find(')');
    if (open != std::string::npos && close != std::string::npos && close > open)
      return line->substr(open + 1, close - open - 1);
  }
  if (cmdline) return cmdline_param(*cmdline, "preempt");
  return std::nullopt;
}

struct Preempt {
  std::string model;   // "none", "voluntary", "full", "lazy", "rt", "dynamic:<mode>" or "unknown"
  std::string source;  // "config", "version" or "unknown"
};

std::optional<Preempt> preempt_from_config(const KernelConfig& config,
                                           const std::optional<std::string>& mode) {
  if (config_yes(config, "CONFIG_PREEMPT_RT")) return Preempt{"rt", "config"};
  std::optional<std::string> built;
  for (const auto& m : kPreemptModels)
    if (config_yes(config, m.config)) {
      built = m.model;
      break;
    }
  // A dynamic kernel boots into the built-in model unless preempt= or debugfs says otherwise.
  if (config_yes(config, "CONFIG_PREEMPT_DYNAMIC"))
    return Preempt{"dynamic:" + mode.value_or(built.value_or("unknown")), "config"};
  if (built) return Preempt{*built, "config"};
  return std::nullopt;
}

Preempt preempt_from_version(const std::string& version, const std::optional<std::string>& mode) {
  const auto words = split_ws(version);
  auto has = [&](std::string_view w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  if (has("PREEMPT_DYNAMIC")) return {"dynamic:" + mode.value_or("unknown"), "version"};
  for (const auto& v : kVersionWords)
    if (has(v.word)) return {v.model, "version"};
  return {"unknown", "unknown"};
}

std::optional<std::string> current_clocksource(const HostPaths& paths) {
  return read_trimmed(paths.sys / "devices/system/clocksource/clocksource0/current_clocksource");
}

// "pinned" is what clocksource= on the cmdline asked for (a recipe pins it that way): a kernel whose
// watchdog marked the pinned one unstable runs on another, and "current" shows it.
json clocksource(const HostPaths& paths, const std::optional<std::string>& cmdline) {
  const auto dir = paths.sys / "devices/system/clocksource/clocksource0";
  auto available = read_trimmed(dir / "available_clocksource");
  return {{"current", or_null(current_clocksource(paths))},
          {"available", available ? json(split_ws(*available)) : json(nullptr)},
          {"pinned", or_null(cmdline ? cmdline_param(*cmdline, "clocksource") : std::nullopt)}};
}

// The letters of kernel/panic.c's taint_flags, indexed by bit (TAINT_PROPRIETARY_MODULE = 0, ...,
// TAINT_DIE = 7, TAINT_WARN = 9, ..., TAINT_FWCTL = 19 since 6.15).
constexpr char kTaintLetters[] = "PFSRMBUDAWCIOELKXTNJ";

// "6.18.44-fc-v595" -> {6, 18}.
std::optional<std::pair<long, long>> major_minor(const json& release) {
  if (!release.is_string()) return std::nullopt;
  const auto& r = release.get_ref<const std::string&>();
  auto dot = r.find('.');
  if (dot == std::string::npos) return std::nullopt;
  auto end = r.find_first_not_of("0123456789", dot + 1);
  auto major = to_long(std::string_view(r).substr(0, dot));
  auto minor = to_long(std::string_view(r).substr(dot + 1, end == std::string::npos ? end : end - dot - 1));
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

std::string scheduler_name(const HostPaths& paths, const json& release) {
  if (read_trimmed(paths.sys / "kernel/sched_ext/state") == "enabled") {
    auto ops = read_trimmed(paths.sys / "kernel/sched_ext/root/ops");
    return kSchedExtPrefix + (ops && !ops->empty() ? *ops : std::string("unknown"));
  }
  auto version = major_minor(release);
  if (!version) return "unknown";
  return *version >= std::pair<long, long>{6, 6} ? "eevdf" : "cfs";
}

json sched_features(const HostPaths& paths) {
  auto text = read_text(paths.sys / "kernel/debug/sched/features");
  if (!text) text = read_text(paths.sys / "kernel/debug/sched_features");  // before 5.13
  return text ? json(split_ws(*text)) : json(nullptr);
}

// The GNU build ID note (type 3, name "GNU") of /sys/kernel/notes, as hex: it names the exact
// kernel image even when two builds share a release string. Null when unreadable or absent.
json build_id(const HostPaths& paths) {
  auto notes = read_text(paths.sys / "kernel/notes");
  if (!notes) return nullptr;
  constexpr std::uint32_t kNtGnuBuildId = 3;
  auto word = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>((*notes)[at + static_cast<std::size_t>(i)]);
    return v;
  };
  auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  for (std::size_t at = 0; at + 12 <= notes->size();) {
    const std::size_t namesz = word(at), descsz = word(at + 4), type = word(at + 8);
    const std::size_t name_at = at + 12, desc_at = name_at + align4(namesz);
    if (desc_at + descsz > notes->size()) break;
    if (type == kNtGnuBuildId && namesz == 4 && notes->compare(name_at, 4, std::string("GNU\0", 4)) == 0) {
      std::string hex;
      for (std::size_t i = 0; i < descsz; ++i)
        hex += fmt::format("{:02x}", static_cast<unsigned char>((*notes)[desc_at + i]));
      return hex;
    }
    at = desc_at + align4(descsz);
  }
  return nullptr;
}

bool is_hex(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}
bool any_text(const std::string&) {
  return true;
}
// SHA-1 or SHA-256 repositories; checked because `schedlab diff` hands the id to git as a revision.
bool is_object_id(const std::string& s) {
  return (s.size() == 40 || s.size() == 64) && is_hex(s);
}
bool is_sha256(const std::string& s) {
  return s.size() == 64 && is_hex(s);
}

// The words the host adds when it boots a kernel the user brought (kernels/: a git ref, a source tree
// as it is, a prebuilt image), each %XX-encoded (core/cmdline_word.hpp). A word that does not decode,
// or whose value is not of its form, is left out: a hand-edited cmdline must not give a wrong identity.
struct UserKernelWord {
  const char* key;    // in kernel.booted_by
  const char* param;  // on the command line
  bool (*valid)(const std::string&);
};
constexpr UserKernelWord kUserKernelWords[] = {{"source", "schedlab.source", any_text},
                                               {"commit", "schedlab.commit", is_object_id},
                                               {"repository", "schedlab.repo", any_text},
                                               {"describe", "schedlab.describe", any_text},
                                               {"image_sha256", "schedlab.image", is_sha256}};

std::optional<std::string> decoded_param(const std::string& cmdline, std::string_view name) {
  auto word = cmdline_param(cmdline, name);
  return word ? decode_cmdline_word(*word) : std::nullopt;
}

// What booted this kernel when `schedlab kernel boot` did: its recipe and label, and the qemu
// accelerator (tcg: an emulated CPU, so timings are functional checks, not performance data); for a
// kernel the user brought, where it came from (a commit of a repository, a tree, an image's hash).
json boot_identity(const std::optional<std::string>& cmdline) {
  if (!cmdline) return nullptr;
  auto recipe = cmdline_param(*cmdline, "schedlab.recipe");
  if (!recipe) return nullptr;
  json out = {{"recipe", *recipe},
              {"label", or_null(cmdline_param(*cmdline, "schedlab.label"))},
              {"accel", or_null(cmdline_param(*cmdline, "schedlab.accel"))}};
  for (const auto& w : kUserKernelWords)
    if (auto value = decoded_param(*cmdline, w.param); value && w.valid(*value)) out[w.key] = *value;
  if (auto dirty = decoded_param(*cmdline, "schedlab.dirty"); dirty == "0" || dirty == "1")
    out["dirty"] = *dirty == "1";
  return out;
}

}  // namespace

std::optional<std::string> read_trimmed(const fs::path& path) {
  auto line = read_line(path);
  if (!line) return std::nullopt;
  return trim(*line);
}

std::optional<std::string> cmdline_param(const std::string& cmdline, std::string_view name) {
  const std::string prefix = std::string(name) + "=";
  std::optional<std::string> value;
  for (const auto& word : split_ws(cmdline)) {
    if (word == "--") break;  // the rest belongs to init
    if (word.rfind(prefix, 0) == 0) value = word.substr(prefix.size());
  }
  return value;
}

json kernel_facts(const HostPaths& paths) {
  auto release = read_trimmed(paths.proc / "sys/kernel/osrelease");
  auto version = read_trimmed(paths.proc / "sys/kernel/version");
  auto cmdline = read_trimmed(paths.proc / "cmdline");
  std::optional<std::string> config_text;
  std::string config_source = "none";
  if (release && !release->empty()) config_text = read_text(paths.boot / ("config-" + *release));
  if (config_text) {
    config_source = "boot/config-" + *release;
  } else if ((config_text = read_gzip_text(paths.proc / "config.gz"))) {
    config_source = "proc/config.gz";
  }
  const KernelConfig config = config_text ? parse_config(*config_text) : KernelConfig{};

  auto hz_it = config.find("CONFIG_HZ");
  auto hz = hz_it == config.end() ? std::nullopt : to_long(hz_it->second);
  auto mode = dynamic_mode(paths, cmdline);
  auto preempt = preempt_from_config(config, mode);
  if (!preempt) preempt = version ? preempt_from_version(*version, mode) : Preempt{"unknown", "unknown"};

  return {{"release", or_null(release)},
          {"version", or_null(version)},
          {"cmdline", or_null(cmdline)},
          {"hz", hz ? json(*hz) : json(nullptr)},
          {"hz_source", hz ? "config" : "unknown"},
          {"preempt", preempt->model},
          {"preempt_source", preempt->source},
          {"clocksource", clocksource(paths, cmdline)},
          {"taint", taint_state(paths)},
          {"mitigations", files_in(paths.sys / "devices/system/cpu/vulnerabilities", "")},
          {"config_source", config_source},
          {"config_hash", config_text ? json(canonical_hash(*config_text)) : json(nullptr)},
          {"build_id", build_id(paths)},
          {"booted_by", boot_identity(cmdline)}};
}

json scheduler_facts(const HostPaths& paths, const json& release) {
  json tunables = files_in(paths.proc / "sys/kernel", "sched_");
  bool debugfs = false;
  for (const char* name : kDebugfsTunables) {
    auto text = read_text(paths.sys / "kernel/debug/sched" / name);
    if (!text) continue;
    if (tunables.is_null()) tunables = json::object();
    tunables[std::string("debugfs/") + name] = trim(*text);
    debugfs = true;
  }
  json features = sched_features(paths);
  return {{"sched_tunables", tunables},
          {"sched_debugfs", debugfs || !features.is_null()},
          {"sched_features", features},
          {"scheduler", scheduler_name(paths, release)}};
}

}  // namespace schedlab::sysinfo_detail

namespace schedlab {

std::string taint_letters(unsigned long mask) {
  using sysinfo_detail::kTaintLetters;
  std::string out;
  constexpr unsigned kKnown = sizeof(kTaintLetters) - 1;
  for (unsigned bit = 0; bit < sizeof(mask) * 8; ++bit) {
    if (!(mask & (1UL << bit))) continue;
    out += bit < kKnown ? std::string(1, kTaintLetters[bit]) : "?" + std::to_string(bit);
  }
  return out;
}

nlohmann::json taint_state(const HostPaths& paths) {
  auto text = sysinfo_detail::read_trimmed(paths.proc / "sys/kernel/tainted");
  unsigned long mask = 0;
  if (!text) return nullptr;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), mask);
  if (ec != std::errc() || p != text->data() + text->size()) return nullptr;
  return {{"value", mask}, {"flags", taint_letters(mask)}};
}

nlohmann::json kernel_state(const HostPaths& paths) {
  return {{"taint", taint_state(paths)},
          {"clocksource", sysinfo_detail::or_null(sysinfo_detail::current_clocksource(paths))}};
}

nlohmann::json kernel_state_change(const nlohmann::json& before, const nlohmann::json& after) {
  auto mask = [](const nlohmann::json& state) -> std::optional<unsigned long> {
    if (!state.is_object() || !state.contains("taint") || !state["taint"].is_object()) return std::nullopt;
    return state["taint"].value("value", 0UL);
  };
  auto was = mask(before), is = mask(after);
  // Taint bits are only ever set: the new ones are what happened during the repetition.
  const unsigned long added = was && is ? *is & ~*was : 0;
  const auto clock = [](const nlohmann::json& state) {
    return state.is_object() ? state.value("clocksource", nlohmann::json()) : nlohmann::json();
  };
  return {{"before", before},
          {"after", after},
          {"tainted", added != 0},
          {"new_taint_flags", taint_letters(added)},
          {"clocksource_changed", clock(before) != clock(after)}};
}

nlohmann::json root_filesystem(const HostPaths& paths) {
  auto text = read_text(paths.proc / "mounts");
  if (!text) return nullptr;
  nlohmann::json root = nullptr;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const auto words = split_ws(line);  // source mountpoint type options dump pass
    if (words.size() >= 3 && words[1] == "/") root = {{"type", words[2]}, {"source", words[0]}};
  }
  return root;
}

}  // namespace schedlab
