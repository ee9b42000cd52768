#include "diff/pairing.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace schedlab {
namespace {

struct Event {
  std::string started_at;
  int side;  // 0 base, 1 other
  std::size_t slot;
  bool operator<(const Event& o) const {
    return std::tie(started_at, side, slot) < std::tie(o.started_at, o.side, o.slot);
  }
};

std::map<int, std::size_t> by_index(const std::vector<TrialId>& trials) {
  std::map<int, std::size_t> out;
  for (std::size_t i = 0; i < trials.size(); ++i) out.emplace(trials[i].trial, i);
  return out;
}

}  // namespace

TrialPairing pair_trials(const InstanceSamples& base, const InstanceSamples& other) {
  TrialPairing p;
  std::vector<Event> timeline;
  for (std::size_t i = 0; i < base.trials.size(); ++i) timeline.push_back({base.trials[i].started_at, 0, i});
  for (std::size_t i = 0; i < other.trials.size(); ++i)
    timeline.push_back({other.trials[i].started_at, 1, i});
  std::sort(timeline.begin(), timeline.end());

  const auto base_index = by_index(base.trials), other_index = by_index(other.trials);
  const bool distinct = base_index.size() == base.trials.size() && other_index.size() == other.trials.size();
  std::size_t shared = 0;
  for (const auto& [trial, slot] : base_index) shared += other_index.count(trial);
  p.by_trial_index = distinct && shared >= 2;

  bool adjacent = true;
  if (p.by_trial_index) {
    std::map<std::pair<int, std::size_t>, std::size_t> position;
    for (std::size_t i = 0; i < timeline.size(); ++i) position[{timeline[i].side, timeline[i].slot}] = i;
    for (const auto& [trial, slot] : base_index) {
      auto it = other_index.find(trial);
      if (it == other_index.end()) {
        p.unmatched_base.push_back(slot);
        continue;
      }
      p.pairs.emplace_back(slot, it->second);
      const auto a = position[{0, slot}], b = position[{1, it->second}];
      adjacent = adjacent && (a > b ? a - b : b - a) == 1;
    }
    for (const auto& [trial, slot] : other_index)
      if (!base_index.count(trial)) p.unmatched_other.push_back(slot);
  } else {
    for (std::size_t i = 0; i < timeline.size();) {
      if (i + 1 < timeline.size() && timeline[i].side != timeline[i + 1].side) {
        const auto& b = timeline[i].side == 0 ? timeline[i] : timeline[i + 1];
        const auto& o = timeline[i].side == 0 ? timeline[i + 1] : timeline[i];
        p.pairs.emplace_back(b.slot, o.slot);
        i += 2;
      } else {
        (timeline[i].side == 0 ? p.unmatched_base : p.unmatched_other).push_back(timeline[i].slot);
        ++i;
      }
    }
    std::sort(p.pairs.begin(), p.pairs.end());
  }
  const std::size_t unmatched = p.unmatched_base.size() + p.unmatched_other.size();
  p.interleaved = p.pairs.size() >= 2 && adjacent && 2 * unmatched <= p.pairs.size();
  return p;
}

}  // namespace schedlab
