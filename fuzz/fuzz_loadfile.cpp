// A dbench loadfile (tbench.loadfile names one), and the exchanges a client derives from it.
#include "fuzz/input_contract.hpp"
#include "workloads/tbench/loadfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string source = "fuzzed-client.txt";
  schedlab::fuzz::parsed_or_input_error(source, [&] {
    auto load =
        schedlab::tbench::parse_loadfile(std::string_view(reinterpret_cast<const char*>(data), size), source);
    (void)schedlab::tbench::exchanges_for_client(load, 3);
  });
  return 0;
}
