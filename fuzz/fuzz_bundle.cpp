// A result bundle from another user or a damaged disk: parse_bundle validates schema, types and ranges.
#include "core/bundle_io.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string source = "fuzzed-bundle.json";
  schedlab::fuzz::parsed_or_input_error(source, [&] {
    auto bundle = schedlab::parse_bundle(schedlab::fuzz::as_text(data, size), source);
    // What the loader accepted is what write_bundle must be able to write back.
    (void)schedlab::bundle_file_text(bundle);
  });
  return 0;
}
