// A tracepoint's tracefs format file (events/sched/*/format), whose offsets the trace source trusts.
#include "collector/trace/tracefs.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string source = "fuzzed/events/sched/sched_switch/format";
  schedlab::fuzz::parsed_or_input_error(source, [&] {
    auto format = schedlab::parse_tracepoint_format(schedlab::fuzz::as_text(data, size), source);
    for (const char* name : {"prev_pid", "next_pid", "prev_state", "pid", "target_cpu"}) {
      if (format.fields.count(name)) (void)format.field(name);
    }
  });
  return 0;
}
