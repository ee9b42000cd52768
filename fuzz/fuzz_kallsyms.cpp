// /proc/kallsyms (the profile's symbol table), and a lookup in what it parsed.
#include <cstring>

#include "collector/profile/kallsyms.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string source = "fuzzed/proc/kallsyms";
  schedlab::fuzz::parsed_or_input_error(source, [&] {
    std::uint64_t ip = 0;
    if (size >= sizeof ip) std::memcpy(&ip, data, sizeof ip);
    auto symbols =
        schedlab::KernelSymbols::parse(std::string_view(reinterpret_cast<const char*>(data), size), source);
    (void)symbols.find(ip);
    (void)symbols.find(0xffffffff81000000ULL);
  });
  return 0;
}
