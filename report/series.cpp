// What the charts plot, read the way the diff reads it (diff/samples.hpp): ok repetitions only, per trial
// in run order, for the headline metrics; latency histograms summed over a side's ok repetitions; a
// summary of every metric and counter for the one-side table.
#include <algorithm>
#include <map>

#include "core/stats.hpp"
#include "diff/profile_diff.hpp"
#include "diff/samples.hpp"
#include "report/report_parts.hpp"

namespace schedlab::report {
namespace {

constexpr std::size_t kTopProfileSymbols = 20;

using Trials = std::vector<TrialValues>;

std::vector<double> flatten(const Trials& trials) {
  std::vector<double> all;
  for (const auto& t : trials) all.insert(all.end(), t.values.begin(), t.values.end());
  return all;
}

nlohmann::json summary_json(const Trials& trials) {
  auto s = summarize(flatten(trials));
  return {{"trials", trials.size()},
          {"repetitions", s.n},
          {"median", s.median},
          {"mean", s.mean},
          {"cv", s.cv},
          {"min", s.min},
          {"max", s.max}};
}

// side_samples tags a trial "started_at#path": the chart's tooltip shows the time, the table the file.
nlohmann::json trials_json(const Trials& trials) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : trials) {
    auto hash = t.started_at.find('#');
    out.push_back({{"started_at", t.started_at.substr(0, hash)},
                   {"bundle", hash == std::string::npos ? "" : t.started_at.substr(hash + 1)},
                   {"values", t.values}});
  }
  return out;
}

// Bucket bounds are explicit in the bundle (core/histogram.hpp), so merging is a sum per bound pair.
nlohmann::json merged_histogram(const std::string& side, const InstanceSamples& s) {
  std::map<std::pair<double, double>, double> counts;
  double total = 0, overflow = 0, max_us = 0;
  std::size_t repetitions = 0;
  std::string unit;
  for (const Instance* in : s.all) {
    for (const auto& rep : in->repetitions) {
      if (!rep.ok() || !rep.details.contains("histogram")) continue;
      const auto& h = rep.details["histogram"];
      ++repetitions;
      unit = h.value("unit", "us");
      for (const auto& b : h.at("buckets"))
        counts[{b.at(0).get<double>(), b.at(1).get<double>()}] += b.at(2).get<double>();
      total += h.value("count", 0.0);
      overflow += h.value("overflow", 0.0);
      max_us = std::max(max_us, h.value("max_us", 0.0));
    }
  }
  if (repetitions == 0) return nullptr;
  // Three parallel arrays: a busy chat run has thousands of buckets, and [lower, upper, count] triples
  // would make the page a third larger.
  std::vector<double> lower, upper, count;
  for (const auto& [bounds, n] : counts) {
    lower.push_back(bounds.first);
    upper.push_back(bounds.second);
    count.push_back(n);
  }
  return {{"side", side},   {"unit", unit},         {"repetitions", repetitions},
          {"count", total}, {"overflow", overflow}, {"max", max_us},
          {"lower", lower}, {"upper", upper},       {"counts", count}};
}

// One side alone has no diffprofile: its own largest symbols, per operation as diffprofile counts them.
nlohmann::json top_profile(const InstanceSamples& s) {
  auto t = profile_totals(s);
  if (t.repetitions == 0) return nullptr;
  std::vector<std::pair<std::string, double>> symbols(t.symbols.begin(), t.symbols.end());
  std::stable_sort(symbols.begin(), symbols.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (symbols.size() > kTopProfileSymbols) symbols.resize(kTopProfileSymbols);
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [symbol, n] : symbols) top.push_back({symbol, n});
  return {{"event", t.event}, {"samples", t.samples}, {"repetitions", t.repetitions}, {"symbols", top}};
}

bool is_headline(const Instance& in, const std::string& metric) {
  auto it = in.metric_info.find(metric);
  return it != in.metric_info.end() && it->second.headline;
}

nlohmann::json metric_series(const std::string& name, const std::string& kind, const Instance& first,
                             const std::vector<std::pair<std::string, const InstanceSamples*>>& per_side) {
  nlohmann::json m = {{"name", name}, {"kind", kind}};
  if (auto it = first.metric_info.find(name); it != first.metric_info.end()) {
    m["unit"] = it->second.unit;
    m["headline"] = it->second.headline;
    m["direction"] = to_string(it->second.direction);
  } else {
    m["headline"] = false;
  }
  nlohmann::json sides = nlohmann::json::array();
  for (const auto& [side, s] : per_side) {
    const auto& source = kind == "counter" ? s->counters : s->metrics;
    auto it = source.find(name);
    if (it == source.end() || it->second.empty()) continue;
    if (kind == "counter") m["unit"] = s->counter_units.at(name);
    nlohmann::json entry = {{"side", side}, {"summary", summary_json(it->second)}};
    // Only headline metrics are charted; the others' values would double the page for nothing.
    if (m["headline"].get<bool>()) entry["trials"] = trials_json(it->second);
    sides.push_back(std::move(entry));
  }
  m["sides"] = sides;
  return m;
}

}  // namespace

nlohmann::json instance_series(const std::vector<Side>& sides) {
  // With two sides and more the tables come from the diff; only the charted metrics need their values.
  const bool one_side = sides.size() == 1;
  std::vector<std::vector<std::pair<std::string, InstanceSamples>>> samples;
  for (const auto& s : sides) samples.push_back(side_samples(s));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, base] : samples.front()) {
    std::vector<std::pair<std::string, const InstanceSamples*>> per_side;
    for (std::size_t i = 0; i < sides.size(); ++i) {
      for (const auto& [k, s] : samples[i])
        if (k == key) per_side.emplace_back(sides[i].name, &s);
    }
    const Instance& first = *base.first;
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& [name, _] : base.metrics) {
      if (one_side || is_headline(first, name))
        metrics.push_back(metric_series(name, "metric", first, per_side));
    }
    // Headline metrics first, as the diff orders them.
    std::stable_sort(metrics.begin(), metrics.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      return a["headline"].get<bool>() > b["headline"].get<bool>();
    });
    if (one_side) {
      for (const auto& [name, _] : base.counters)
        metrics.push_back(metric_series(name, "counter", first, per_side));
    }
    nlohmann::json histograms = nlohmann::json::array();
    for (const auto& [side, s] : per_side) {
      auto h = merged_histogram(side, *s);
      if (!h.is_null()) histograms.push_back(std::move(h));
    }
    nlohmann::json entry = {{"key", key},
                            {"id", first.id},
                            {"workload", first.workload},
                            {"workload_version", first.workload_version},
                            {"params", first.params},
                            {"metrics", metrics},
                            {"histograms", histograms}};
    if (one_side) entry["profile"] = top_profile(base);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace schedlab::report
