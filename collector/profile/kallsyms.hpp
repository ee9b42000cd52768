#pragma once
// Kernel text symbols from /proc/kallsyms, sorted once so that each sampled IP is one binary
// search. Module symbols keep their module ("foo [kvm]"), as perf and readprofile print them.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace schedlab {

class KernelSymbols {
 public:
  struct Symbol {
    std::uint64_t address = 0;
    std::string name;
  };

  // Parses kallsyms text; `source` names it in errors. Throws InputError on a malformed line
  // (with its number). Addresses that are all zero (kernel.kptr_restrict hides them) leave
  // the table empty and hidden() true.
  static KernelSymbols parse(std::string_view text, const std::string& source);
  static KernelSymbols load(const std::filesystem::path& kallsyms);

  // The symbol whose text contains `ip` (the last one starting at or before it), or nullptr when
  // `ip` lies outside the kernel's and modules' text as kallsyms describes it.
  const Symbol* find(std::uint64_t ip) const;

  bool hidden() const { return hidden_; }
  std::size_t size() const { return symbols_.size(); }
  const std::string& source() const { return source_; }

 private:
  std::vector<Symbol> symbols_;      // text symbols, by address
  std::uint64_t core_text_end_ = 0;  // _etext: IPs past it and below the first module are not text
  std::uint64_t module_start_ = UINT64_MAX;
  bool hidden_ = false;
  std::string source_;
};

}  // namespace schedlab
