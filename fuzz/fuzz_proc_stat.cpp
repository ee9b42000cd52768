// /proc/stat, and /proc/interrupts and /proc/softirqs (the per-CPU tables), as the sysstats source reads
// them around every repetition.
#include "collector/sysstats/proc_tables.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string text = schedlab::fuzz::as_text(data, size);
  schedlab::fuzz::parsed_or_input_error("fuzzed/proc/stat",
                                        [&] { (void)schedlab::parse_proc_stat(text, "fuzzed/proc/stat"); });
  schedlab::fuzz::parsed_or_input_error(
      "fuzzed/proc/interrupts", [&] { (void)schedlab::parse_per_cpu_table(text, "fuzzed/proc/interrupts"); });
  return 0;
}
