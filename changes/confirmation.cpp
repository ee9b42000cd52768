#include "changes/confirmation.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/bundle_io.hpp"
#include "core/error.hpp"
#include "kernels/recipe.hpp"

namespace schedlab {

namespace fs = std::filesystem;

namespace {

constexpr double kLargestRerunTargetPct = 50;

const Instance* find_instance(const Bundle& b, const HistoryPoint& p) {
  for (const auto& i : b.instances)
    if (i.id == p.instance_id && i.params_hash == p.params_hash) return &i;
  return nullptr;
}

std::string kernel_identity(const Bundle& b) {
  const auto& c = b.configuration;
  return c.value("kernel_release", "?") + " (config " + c.value("kernel_config_hash", "?") + ")";
}

// The runtime configuration a bundle ran under; "as found" (no settings) when it had none.
runtime::RuntimeConfiguration runtime_of(const Bundle& b, const std::string& name) {
  runtime::RuntimeConfiguration c;
  if (b.configuration.contains("runtime") && b.configuration["runtime"].contains("given"))
    c = runtime::configuration_from_json(b.configuration["runtime"]["given"],
                                         "bundle configuration.runtime.given");
  c.name = name;
  c.defined_at = "the bundle of the run " + name + " the change";
  return c;
}

std::string param_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

RerunPlan plan_rerun(const SeriesChange& change, const std::string& running_release,
                     const std::string& running_host, const RerunOptions& options) {
  RerunPlan plan;
  Bundle before, after;
  try {
    before = load_bundle(change.well_before.bundle_path);
    after = load_bundle(change.well_after.bundle_path);
  } catch (const std::exception& e) {
    plan.unconfirmable = std::string("a bundle either side is gone: ") + e.what();
    return plan;
  }
  // A qemu guest's hostname is "(none)" whichever machine booted it; the store a daemon writes is its own.
  const bool guest = after.kernel.is_object() && after.kernel.contains("booted_by");
  if (!guest && change.key.host != running_host) {
    plan.unconfirmable = "measured on host " + change.key.host + ", not this one (" + running_host + ")";
    return plan;
  }
  const Instance* instance = find_instance(after, change.well_after);
  if (!instance) {
    plan.unconfirmable = "the bundle after the change has no instance " + change.after.instance_id;
    return plan;
  }
  const std::string kb = kernel_identity(before), ka = kernel_identity(after);
  const auto cmdline = [](const Bundle& b) { return b.configuration.value("cmdline", ""); };
  // A campaign's recipe steps label their bundles with the recipe's name: two recipes (two kernels, or
  // one kernel with other boot-time settings) boot again, whatever their identities say.
  auto recipe = [&](const std::string& label) {
    try {
      (void)kernels::load_recipe(
          options.recipes_dir.empty() ? kernels::default_recipes_dir() : options.recipes_dir, label);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  const bool recipes =
      !before.label.empty() && !after.label.empty() && recipe(before.label) && recipe(after.label);
  const bool kernel_changed = kb != ka || cmdline(before) != cmdline(after);
  if (recipes && before.label != after.label) {
    if (options.boot != "qemu") {
      plan.unconfirmable = "the recipe changed (" + before.label + " -> " + after.label + "): on a " +
                           options.boot +
                           " lab box a rerun reboots the machine per trial; a target campaign of the two "
                           "recipes does that, the daemon does not start one by itself";
      return plan;
    }
    plan.before_recipe = before.label;
    plan.after_recipe = after.label;
    plan.workload = change.key.workload;
    plan.instance_id = change.key.instance_id;
    for (const auto& [k, v] : instance->params.items()) plan.params.emplace_back(k, param_text(v));
    return plan;
  }
  if (kernel_changed) {
    plan.unconfirmable =
        "the kernel changed (" + kb + " -> " + ka + ")" +
        (recipes ? " under one recipe, " + after.label + ": re-pinned, its old kernel is gone"
                 : ", not between two kernel recipes (labels '" + before.label + "', '" + after.label +
                       "'): nothing to boot again");
    return plan;
  }
  const std::string release = after.configuration.value("kernel_release", "");
  if (release != running_release) {
    plan.unconfirmable = "the runs' kernel " + release + " is not the running one (" + running_release + ")";
    return plan;
  }
  try {
    plan.before = runtime_of(before, "before");
    plan.after = runtime_of(after, "after");
  } catch (const std::exception& e) {
    plan.unconfirmable = std::string("a runtime configuration cannot be applied again: ") + e.what();
    return plan;
  }
  auto settings = [](runtime::RuntimeConfiguration c) {
    c.name.clear();
    c.defined_at.clear();
    return c.to_json().dump();
  };
  if (settings(plan.before) == settings(plan.after)) {
    // Nothing to alternate: the same kernel and settings either side. What moved is the machine (other
    // tenants, the host) or chance; a rerun of one configuration against itself cannot tell which.
    std::string moved;
    for (const auto& d : change.differences)
      if (d.rfind("bundle.environment/", 0) == 0) moved += (moved.empty() ? "" : "; ") + d;
    plan.unconfirmable =
        "the same kernel and runtime configuration either side (3 runs off): a level shift of the "
        "machine or chance, nothing to rerun" +
        (moved.empty() ? std::string() : " (the environment changed: " + moved + ")");
    return plan;
  }
  plan.workload = change.key.workload;
  plan.instance_id = change.key.instance_id;
  for (const auto& [k, v] : instance->params.items()) plan.params.emplace_back(k, param_text(v));
  return plan;
}

std::vector<std::string> rerun_arguments(const RerunPlan& plan, const SeriesChange& change,
                                         const RerunOptions& options, const fs::path& out_dir) {
  // Planned for the change's own size: a smaller real change is still "worse (not beyond ±m%)", which
  // confirms. The experiment takes targets below 100%; one of 50% already stops after its pilot on a
  // change that large.
  const double target =
      std::clamp(std::abs(change.change.relative) * 100, options.min_target_pct, kLargestRerunTargetPct);
  std::vector<std::string> args{"run", "--workload", plan.workload, "--instance-id", plan.instance_id};
  for (const auto& [k, v] : plan.params)
    args.insert(args.end(), {"--param", plan.workload + "." + k + "=" + v});
  args.insert(args.end(),
              {"--configuration", plan.before.to_spec(), "--configuration", plan.after.to_spec(), "--metric",
               change.key.metric, "--target-mde", fmt::format("{:.2f}%", target), "--budget",
               fmt::format("{:.0f}s", options.budget_s), "--max-trials", std::to_string(options.max_pairs),
               "--repetitions", std::to_string(options.repetitions), "--seed", std::to_string(options.seed),
               "--out", out_dir.string()});
  return args;
}

std::string kernel_rerun_campaign(const RerunPlan& plan, const SeriesChange& change,
                                  const RerunOptions& options, const fs::path& dir) {
  const double target =
      std::clamp(std::abs(change.change.relative) * 100, options.min_target_pct, kLargestRerunTargetPct);
  const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string params;
  for (const auto& [k, v] : plan.params) params += (params.empty() ? "" : ", ") + k + " = " + quoted(v);
  std::string text = "# A kernel change point's rerun (changes/README.md), written by schedlab\n[campaign]\n";
  text += "name = \"rerun\"\nschedule = \"once\"\n";
  text += "store = " + quoted("sqlite://" + (dir / "store.db").string()) + "\n";
  text += "output = " + quoted((dir / "out").string()) + "\n";
  if (!options.kernel_cache.empty()) text += "kernel_cache = " + quoted(options.kernel_cache.string()) + "\n";
  text += "boot = \"qemu\"\nconfigurations = [" + quoted(plan.before_recipe) + ", " +
          quoted(plan.after_recipe) + "]\n";
  text += fmt::format("target_mde = {:.2f}\nbudget = {:.0f}\nmax_trials = {}\npilot = 3\nseed = {}\n", target,
                      options.budget_s, options.max_pairs, options.seed);
  text += fmt::format("counters = false\ntimeout_s = {:g}\nsettle_timeout_s = {:g}\n", options.timeout_s,
                      options.settle_timeout_s);
  text += "[changes]\ndetect = false\nconfirm = false\n[exporter]\nlisten = \"\"\n";
  text += "[[workload]]\nname = " + quoted(plan.workload) + "\nid = " + quoted(plan.instance_id) + "\n";
  text += fmt::format("repetitions = {}\nparams = {{ {} }}\n", options.repetitions, params);
  return text;
}

std::string status_from_verdict(const std::string& verdict, const std::string& direction) {
  if (verdict.rfind(direction, 0) == 0) return kConfirmed;
  return kNotReproduced;
}

std::optional<RerunOutcome> read_rerun(const fs::path& out_dir, const SeriesChange& change) {
  std::optional<fs::path> record;
  std::error_code ec;
  if (fs::is_directory(out_dir))
    for (auto it = fs::recursive_directory_iterator(out_dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name == "experiment.json" ||
          (name.rfind("experiment-", 0) == 0 && it->path().extension() == ".json"))
        record = it->path();
    }
  if (!record) return std::nullopt;
  std::ifstream in(*record);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("stop") || j["stop"].is_null()) return std::nullopt;
  const auto& stop = j["stop"];
  const std::string verdict = stop.value("verdict", "");
  RerunOutcome out;
  out.record = *record;
  out.status = status_from_verdict(verdict, change.direction);
  std::string interval;
  if (stop.contains("interval_pct") && stop["interval_pct"].size() == 2)
    interval = fmt::format(" [{:+.1f}%, {:+.1f}%]", stop["interval_pct"][0].get<double>(),
                           stop["interval_pct"][1].get<double>());
  out.reason =
      fmt::format("rerun: {} {:+.1f}%{} after {} pairs ({})", verdict, stop.value("estimate_pct", 0.0),
                  interval, stop.value("pairs", 0), stop.value("reason", ""));
  return out;
}

}  // namespace schedlab
