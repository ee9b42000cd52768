#include "diff/samples.hpp"

#include <algorithm>

namespace schedlab {

std::string instance_key(const Instance& in) {
  return in.workload + "/" + (in.compared_as.empty() ? in.params_hash : in.compared_as);
}

namespace {

void append(std::map<std::string, std::vector<TrialValues>>& into, const std::string& name,
            const std::string& started_at, std::size_t slot, double value) {
  auto& trials = into[name];
  if (trials.empty() || trials.back().started_at != started_at) trials.push_back({started_at, {}, slot});
  trials.back().values.push_back(value);
}

}  // namespace

void WorkDone::add(const Repetition& rep) {
  ++repetitions;
  auto ops = rep.metrics.find("operations");
  if (ops == rep.metrics.end() || !(ops->second.value > 0))
    every_rep_has_operations = false;
  else
    operations += ops->second.value;
}

std::vector<std::pair<std::string, InstanceSamples>> side_samples(const Side& side) {
  std::vector<std::pair<std::string, InstanceSamples>> out;
  auto instance_slot = [&out](const std::string& key) -> InstanceSamples& {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == key; });
    if (it != out.end()) return it->second;
    out.emplace_back(key, InstanceSamples{});
    return out.back().second;
  };
  for (const auto& loaded : side.bundles) {
    // Each trial is its own sample group even if two trials share a start time.
    auto trial_tag = loaded.bundle.started_at + "#" + loaded.path.string();
    for (const auto& in : loaded.bundle.instances) {
      auto& s = instance_slot(instance_key(in));
      if (!s.first) s.first = &in;
      s.all.push_back(&in);
      const std::size_t slot = s.trials.size();
      s.trials.push_back({loaded.bundle.trial, loaded.bundle.started_at, loaded.path.string(), 0, 0});
      for (const auto& rep : in.repetitions) {
        ++s.total;
        ++s.trials.back().total;
        if (!rep.ok()) {
          ++s.failed;
          ++s.trials.back().failed;
          continue;
        }
        for (const auto& [name, m] : rep.metrics) append(s.metrics, name, trial_tag, slot, m.value);
        for (const auto& [name, c] : rep.counters) {
          if (!c.ok()) continue;
          append(s.counters, name, trial_tag, slot, c.value);
          s.counter_units[name] = c.unit;
          auto& q = s.counter_quality[name];
          ++q.repetitions;
          if (c.multiplexed()) {
            ++q.multiplexed;
            q.max_scaling = std::max(q.max_scaling, c.scaling());
          }
          if (c.contaminated) {
            ++q.contaminated;
            q.max_foreign_share = std::max(q.max_foreign_share, c.foreign_share);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace schedlab
