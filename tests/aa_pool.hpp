#pragma once
// The A/A pool: the ln ratios ln(b/a) of 500 real pairs of yield trials (b the same configuration as a),
// run in pairs of seeded random order on this VM (tests/fixtures/aa-pool-yield/README.md), the pairs
// with a value on both sides.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace schedlab::testing {

inline std::vector<double> aa_pool_ln_ratios() {
  std::ifstream in(std::string(SCHEDLAB_FIXTURES_DIR) + "/aa-pool-yield/pairs.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<double> d;
  for (const auto& p : j.at("pairs"))
    if (p.at("a").is_number() && p.at("b").is_number())
      d.push_back(std::log(p.at("b").get<double>() / p.at("a").get<double>()));
  return d;
}

}  // namespace schedlab::testing
