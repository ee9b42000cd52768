#pragma once
// The values a side holds for one workload instance: per trial, the ok repetitions' metric and counter
// values in run order, and how many repetitions did not succeed.
#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "diff/sides.hpp"

namespace schedlab {

// Instances match across sides and trials by workload and resolved parameters.
std::string instance_key(const Instance& in);

struct TrialValues {
  std::string started_at;
  std::vector<double> values;  // ok repetitions, in run order
};

struct InstanceSamples {
  const Instance* first = nullptr;   // for id, params, metric_info, version
  std::vector<const Instance*> all;  // every trial's copy (diagnostic repetitions, profiles)
  std::map<std::string, std::vector<TrialValues>> metrics;
  std::map<std::string, std::vector<TrialValues>> counters;
  std::map<std::string, std::string> counter_units;
  std::size_t failed = 0;
  std::size_t total = 0;
};

// Instances of a side by key, in the order they first appear.
std::vector<std::pair<std::string, InstanceSamples>> side_samples(const Side& side);

}  // namespace schedlab
