#include "daemon/campaign/check_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace schedlab {
namespace {

// Local time with its zone abbreviation, as systemd-analyze prints an elapse: "Wed 2026-12-02 02:00:00 CET".
std::string local_time_text(std::chrono::system_clock::time_point t) {
  const time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

std::string params_text(const std::map<std::string, std::string>& params) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "(defaults)" : out;
}

}  // namespace

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} s", s);
}

std::string format_campaign_check(const Campaign& c, const std::vector<CampaignStep>& plan,
                                  const PlanEstimate& estimate, std::chrono::system_clock::time_point now) {
  std::string out =
      fmt::format("campaign {} ({}, content hash {})\n", c.name, c.file.string(), c.content_hash);
  out += fmt::format("store {}, bundles under {}\n", c.store_url, c.output.string());
  std::string configs;
  for (const auto& conf : c.configurations) configs += (configs.empty() ? "" : ", ") + conf;
  // `boot` only matters for recipe configurations: a campaign on the running kernel boots nothing.
  const bool boots = std::any_of(c.configurations.begin(), c.configurations.end(),
                                 [](const std::string& conf) { return !on_running_kernel(conf); });
  out += fmt::format("configurations {}; {} trial(s), {} order, seed {}; {}\n", configs, c.trials,
                     c.order == CampaignOrder::kInterleaved ? "interleaved" : "blocked", c.seed,
                     boots ? "recipes boot by " + c.boot : "on the running kernel, nothing is booted");
  std::string events;
  for (const auto& e : c.events) events += (events.empty() ? "" : ", ") + e;
  out += fmt::format("counters {}, profile {}, timeout {} s per repetition\n",
                     !c.counters      ? "off"
                     : events.empty() ? "default set"
                                      : events,
                     c.profile ? "on" : "off", c.timeout_s);
  out += c.on_disk_full == OnDiskFull::kStop
             ? std::string("on a full disk: stop (exit 73)\n")
             : fmt::format("on a full disk: wait, looking again every {:g} s\n", c.disk_full_retry_s);
  out += fmt::format("exporter {}{}\n", c.exporter.listen.empty() ? "off" : c.exporter.listen,
                     c.exporter.pushgateway.empty() ? "" : ", pushing to " + c.exporter.pushgateway);

  if (c.target) {
    const auto& t = *c.target;
    out += fmt::format(
        "sequential comparison of {} (a) and {} (b), each instance on its headline metric: target MDE "
        "{:g}%, equivalence margin ±{:g}%, alpha {:g}; a pilot of {} pairs plans it, then a look every {} "
        "pair(s), stopping an instance's steps once it answers; at most {} pairs{}\n",
        c.configurations[0], c.configurations[1], t.mde_pct, t.margin_pct.value_or(t.mde_pct), t.alpha,
        t.pilot, t.look_every, c.trials,
        t.budget_s ? fmt::format(", budget {} of machine time", format_duration(*t.budget_s))
                   : std::string());
  }
  // A target campaign's plan runs to its cap only when nothing stops it: its pilot is what surely runs.
  const int listed_trials = c.target ? c.target->pilot : c.trials;
  out += fmt::format("\n{:>4}  {:<44} {:<16} {:>5}  {:<10} {:>4}  {}\n", "step", "key", "configuration",
                     "trial", "workload", "reps", "params");
  for (const auto& s : plan)
    if (s.trial <= listed_trials)
      out += fmt::format("{:>4}  {:<44} {:<16} {:>5}  {:<10} {:>4}  {}\n", s.index, s.key, s.configuration,
                         s.trial, s.workload, s.repetitions, params_text(s.params));
  if (listed_trials < c.trials)
    out += fmt::format("   …  pairs {} to {} as the looks need them\n", listed_trials + 1, c.trials);

  const auto totals = plan_totals(plan);
  out +=
      fmt::format("\n{}total: {} steps, {} repetitions (+{} discarded warm-ups), {} boots\n",
                  c.target ? "at most, " : "", totals.steps, totals.repetitions, totals.steps, totals.boots);
  if (!c.schedule) {
    out += "schedule: once (the daemon runs the plan, then exits)\n";
  } else if (auto next = next_elapse(*c.schedule, now)) {
    out += fmt::format("schedule: {}; next run {}\n", c.schedule->text, local_time_text(*next));
  } else {
    out += fmt::format("schedule: {}; never elapses again (every time it names is past)\n", c.schedule->text);
  }
  if (estimate.seconds && c.target)
    out += fmt::format("estimated duration: {} per pair of trials{}, boots not counted\n",
                       format_duration(*estimate.seconds / c.trials),
                       c.target->budget_s
                           ? ""
                           : fmt::format(", {} for all {}", format_duration(*estimate.seconds), c.trials));
  else if (estimate.seconds)
    out += fmt::format("estimated duration: {}\n", format_duration(*estimate.seconds));
  else if (estimate.steps_known == 0)
    out += "estimated duration: no past runs: unknown\n";
  else
    out += fmt::format("estimated duration: unknown ({} of {} steps have no past run)\n",
                       estimate.steps_unknown, estimate.steps_known + estimate.steps_unknown);
  return out;
}

}  // namespace schedlab
