#include "diff/profile_diff.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/result.hpp"

namespace schedlab {

ProfileTotals profile_totals(const InstanceSamples& side) {
  ProfileTotals t;
  WorkDone work;
  for (const Instance* in : side.all) {
    for (const auto& rep : in->diagnostics) {
      if (!rep.ok() || rep.profile.value("status", "") != status::kOk) continue;
      work.add(rep);
      t.event = rep.profile.value("event", "");
      t.nmi = rep.profile.value("nmi", false);
      t.samples += rep.profile.value("samples", 0.0);
      t.lost_samples += rep.profile.value("lost_samples", 0.0);
      for (const auto& [symbol, n] : rep.profile.at("symbols").items()) t.symbols[symbol] += n.get<double>();
    }
  }
  t.repetitions = work.repetitions;
  t.per = work.every_rep_has_operations ? "operation" : "repetition";
  t.operations = work.divisor(work.every_rep_has_operations);
  return t;
}

ProfileDiff diff_profiles(const std::string& side, const ProfileTotals& base, const ProfileTotals& other) {
  ProfileDiff d;
  d.side = side;
  d.event = base.event;
  d.base_repetitions = base.repetitions;
  d.other_repetitions = other.repetitions;
  if (base.repetitions == 0 || other.repetitions == 0) {
    d.warnings.push_back("no profile on " + std::string(base.repetitions == 0 ? "the baseline" : side) +
                         " (run with --profile on both sides)");
    return d;
  }
  if (base.event != other.event) {
    d.warnings.push_back(
        fmt::format("profiles sampled different events ({} vs {}): not compared", base.event, other.event));
    return d;
  }
  d.per = base.per == other.per ? base.per : "repetition";
  const double base_ops = d.per == base.per ? base.operations : static_cast<double>(base.repetitions);
  const double other_ops = d.per == other.per ? other.operations : static_cast<double>(other.repetitions);
  d.scale = base_ops / other_ops;
  if (!base.nmi || !other.nmi)
    d.warnings.push_back(
        d.event +
        " sampling is not NMI-based: time in interrupts-off code (most of __schedule) is charged to the next "
        "interrupts-on point (finish_task_switch, _raw_spin_unlock_irq)");
  if (base.lost_samples > 0 || other.lost_samples > 0)
    d.warnings.push_back(
        fmt::format("samples were lost (ring buffer full): {:.0f} on the baseline, {:.0f} on {}",
                    base.lost_samples, other.lost_samples, side));
  auto line = [&](const std::string& symbol, double a, double b_raw) {
    ProfileLine l;
    l.symbol = symbol;
    l.base = a;
    l.other = b_raw * d.scale;
    l.delta = l.other - a;
    l.pct = a > 0 ? l.delta / a * 100.0 : 0.0;
    // Counts are Poisson: var(a) = a, var(scale * b) = scale^2 * b.
    l.noise = std::fabs(l.delta) < 2.0 * std::sqrt(a + d.scale * d.scale * b_raw);
    return l;
  };
  d.lines.push_back(line("total", base.samples, other.samples));
  std::vector<ProfileLine> symbols;
  for (const auto& [symbol, a] : base.symbols) {
    auto it = other.symbols.find(symbol);
    symbols.push_back(line(symbol, a, it == other.symbols.end() ? 0.0 : it->second));
  }
  for (const auto& [symbol, b] : other.symbols)
    if (!base.symbols.count(symbol)) symbols.push_back(line(symbol, 0.0, b));
  std::stable_sort(symbols.begin(), symbols.end(), [](const ProfileLine& x, const ProfileLine& y) {
    return x.delta != y.delta ? x.delta > y.delta : x.symbol < y.symbol;
  });
  d.lines.insert(d.lines.end(), symbols.begin(), symbols.end());
  return d;
}

std::string format_diffprofile(const ProfileDiff& d, const ProfileFormat& f) {
  std::string out;
  for (const auto& w : d.warnings) out += "  warning: " + w + "\n";
  return out + format_diffprofile_rows(d, f);
}

std::string format_diffprofile_rows(const ProfileDiff& d, const ProfileFormat& f) {
  std::string out;
  if (d.lines.empty()) return out;
  std::vector<const ProfileLine*> shown;
  std::size_t hidden = 0;
  for (std::size_t i = 1; i < d.lines.size(); ++i) {
    if (d.lines[i].noise && !f.all)
      ++hidden;
    else
      shown.push_back(&d.lines[i]);
  }
  auto print = [&out](const ProfileLine& l) {
    out += fmt::format("{:>10} {:>7.1f}% {}\n", std::lround(l.delta), l.pct, l.symbol);
  };
  print(d.lines.front());
  if (f.lines > 0 && shown.size() > 2 * f.lines) {
    for (std::size_t i = 0; i < f.lines; ++i) print(*shown[i]);
    out += "       ...\n";
    for (std::size_t i = shown.size() - f.lines; i < shown.size(); ++i) print(*shown[i]);
  } else {
    for (const auto* l : shown) print(*l);
  }
  if (hidden > 0)
    out += fmt::format("  ({} symbols within Poisson noise hidden; --profile-all shows them)\n", hidden);
  return out;
}

nlohmann::json to_json(const ProfileDiff& d) {
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& l : d.lines)
    lines.push_back({{"symbol", l.symbol},
                     {"base", l.base},
                     {"other", l.other},
                     {"delta", l.delta},
                     {"pct", l.pct},
                     {"within_noise", l.noise}});
  return {{"side", d.side},
          {"event", d.event},
          {"normalised_per", d.per},
          {"scale", d.scale},
          {"base_repetitions", d.base_repetitions},
          {"other_repetitions", d.other_repetitions},
          {"warnings", d.warnings},
          {"lines", lines}};
}

}  // namespace schedlab
