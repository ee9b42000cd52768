#include "collector/profile/kallsyms.hpp"

#include <algorithm>
#include <charconv>

#include "collector/sysstats/proc_text.hpp"
#include "core/error.hpp"
#include "core/host_paths.hpp"

namespace schedlab {
namespace {

// t/T: text, w/W: weak (functions in practice). Data symbols (d, b, r, ...) would swallow the
// IPs that follow them if they were kept.
bool is_text_type(char type) {
  return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

}  // namespace

KernelSymbols KernelSymbols::parse(std::string_view text, const std::string& source) {
  KernelSymbols table;
  table.source_ = source;
  bool any_address = false;
  std::size_t lines = 0;
  for_each_line(std::string(text), [&](std::size_t number, const std::vector<std::string>& words) {
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t foo\t[mod]"
    ++lines;
    if (words.size() < 3 || words.size() > 4 || words[1].size() != 1)
      malformed_line(source, number, "expected 'ADDRESS TYPE NAME [MODULE]'");
    std::uint64_t address = 0;
    const std::string& hex = words[0];
    auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), address, 16);
    if (ec != std::errc() || end != hex.data() + hex.size())
      malformed_line(source, number, "address '" + hex + "' is not hexadecimal");
    any_address = any_address || address != 0;
    const std::string& name = words[2];
    if (name == "_etext") table.core_text_end_ = address;
    if (!is_text_type(words[1][0])) return;
    std::string full = name;
    if (words.size() == 4) {
      full += ' ' + words[3];
      table.module_start_ = std::min(table.module_start_, address);
    }
    table.symbols_.push_back({address, std::move(full)});
  });
  if (lines == 0) throw InputError(source + ": no symbols (empty file)");
  if (!any_address) {
    table.hidden_ = true;
    table.symbols_.clear();
    return table;
  }
  std::stable_sort(table.symbols_.begin(), table.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  return table;
}

KernelSymbols KernelSymbols::load(const std::filesystem::path& kallsyms) {
  auto text = read_text(kallsyms);
  if (!text) throw InputError(kallsyms.string() + ": cannot be read");
  return parse(*text, kallsyms.string());
}

const KernelSymbols::Symbol* KernelSymbols::find(std::uint64_t ip) const {
  if (symbols_.empty() || ip < symbols_.front().address) return nullptr;
  if (core_text_end_ != 0 && ip >= core_text_end_ && ip < module_start_) return nullptr;
  auto after = std::upper_bound(symbols_.begin(), symbols_.end(), ip,
                                [](std::uint64_t value, const Symbol& s) { return value < s.address; });
  return &*std::prev(after);
}

}  // namespace schedlab
