// A campaign file someone else wrote: parsed and validated against the built-in kernel recipes, then
// expanded into the plan the daemon would run, as `schedlab campaign check` does.
#include "daemon/campaign/campaign.hpp"
#include "fuzz/input_contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto file = schedlab::fuzz::scratch_dir() / "campaign.toml";
  schedlab::fuzz::write_file(file, std::string_view(reinterpret_cast<const char*>(data), size));
  schedlab::fuzz::parsed_or_input_error(file.string(), [&] {
    auto campaign = schedlab::load_campaign(file, SCHEDLAB_SOURCE_DIR "/kernels/recipes");
    auto plan = schedlab::expand_plan(campaign);
    (void)schedlab::plan_totals(plan);
  });
  return 0;
}
