// /proc/schedstat as a kernel of any version (or a recorded fixture) writes it.
#include "collector/sysstats/schedstat.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string source = "fuzzed/proc/schedstat";
  schedlab::fuzz::parsed_or_input_error(
      source, [&] { (void)schedlab::parse_schedstat(schedlab::fuzz::as_text(data, size), source); });
  return 0;
}
