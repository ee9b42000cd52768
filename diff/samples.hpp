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
  std::string started_at;      // "time#path": the tag of the trial (unique even if two share a time)
  std::vector<double> values;  // ok repetitions, in run order
  std::size_t slot = 0;        // the trial's index in InstanceSamples::trials
};

// One trial of an instance, whether or not any repetition succeeded: pairs are matched on these.
struct TrialId {
  int trial = 0;           // the bundle's trial index
  std::string started_at;  // the bundle's start time
  std::string path;        // the bundle's file
  std::size_t failed = 0;  // repetitions of this trial that did not succeed
  std::size_t total = 0;
};

// How a side's readings of one counter were taken, for the diff to mark: multiplexed readings were
// scaled up from part of the window (time_enabled / time_running), contaminated ones counted other tasks
// beyond the threshold (counting on the CPUs).
struct CounterQuality {
  std::size_t repetitions = 0;
  std::size_t multiplexed = 0;
  double max_scaling = 1;
  std::size_t contaminated = 0;
  double max_foreign_share = 0;
  bool marked() const { return multiplexed > 0 || contaminated > 0; }
};

struct InstanceSamples {
  const Instance* first = nullptr;   // for id, params, metric_info, version
  std::vector<const Instance*> all;  // every trial's copy (diagnostic repetitions, profiles)
  std::vector<TrialId> trials;       // every trial that ran the instance, in start order
  std::map<std::string, std::vector<TrialValues>> metrics;
  std::map<std::string, std::vector<TrialValues>> counters;
  std::map<std::string, std::string> counter_units;
  std::map<std::string, CounterQuality> counter_quality;
  std::size_t failed = 0;
  std::size_t total = 0;
};

// The work a set of diagnostic repetitions did, to normalise their profiles, traces and counters by:
// the workload's `operations` summed, or, when a repetition lacks them, only how many repetitions.
struct WorkDone {
  std::size_t repetitions = 0;
  double operations = 0;
  bool every_rep_has_operations = true;
  void add(const Repetition& rep);
  double divisor(bool per_operation) const {
    return per_operation ? operations : static_cast<double>(repetitions);
  }
};

// Instances of a side by key, in the order they first appear.
std::vector<std::pair<std::string, InstanceSamples>> side_samples(const Side& side);

}  // namespace schedlab
