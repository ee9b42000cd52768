#include "daemon/exporter/exporter.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "collector/sysinfo/host_class.hpp"
#include "core/error.hpp"
#include "daemon/exporter/change_points.hpp"
#include "daemon/exporter/headline.hpp"
#include "daemon/exporter/listen.hpp"
#include "daemon/exporter/process_metrics.hpp"
#include "daemon/exporter/push.hpp"
#include "schedlab/build_info.hpp"

namespace schedlab {

namespace {

using prometheus::Labels;

std::string machine_hostname() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) throw SystemError("exporter: gethostname", errno);
  return name.data();
}

// Headline series rendered into a prometheus-cpp registry, remembered per configuration so that a
// configuration's series can be removed all together when it falls out of the newest N.
//
// One family per workload and metric, in base units (schedlab_wakeup_latency_p99_seconds), rather than
// one schedlab_headline{metric=...} family: Prometheus wants the unit in the name and a sum or average
// over a family's labels to mean something, and Grafana sets a panel's unit per query; a family that
// mixed seconds with bytes per second would need per-series overrides and invites meaningless
// aggregations. The label is "instance_id", not "instance": Prometheus owns `instance` (the scrape
// target) and would rename ours to exported_instance.
//
// Latency is a histogram, not a summary: a summary's quantiles cannot be aggregated across hosts or
// instances, while histogram buckets with the same explicit bounds add up, and histogram_quantile() over
// `sum by (le)` gives a fleet's p99. The buckets hold the latest bundle's counts for the configuration
// (replaced on each publish), so read them directly, not through rate(). Verdicts stay with `schedlab
// diff`, which compares repetitions' tails as DESIGN.md says; the histogram is for looking.
class HeadlineFamilies {
 public:
  explicit HeadlineFamilies(prometheus::Registry& registry) : registry_(registry) {}

  void set(const std::string& configuration, const Labels& labels, const HeadlineValue& v) {
    auto& family = gauge_family(v.family, v.help);
    auto& g = family.Add(labels);
    g.Set(v.value);
    gauges_[configuration].insert({&family, &g});
  }

  void set(const std::string& configuration, const Labels& labels, const LatencyBuckets& h) {
    auto& family = histogram_family(h.family, h.help);
    auto& owned = histograms_[configuration];
    if (family.Has(labels)) {
      // A histogram only accumulates: a newer bundle's counts replace the series.
      auto& old = family.Add(labels, latency_bounds_seconds());
      owned.erase({&family, &old});
      family.Remove(&old);
    }
    auto& hist = family.Add(labels, latency_bounds_seconds());
    hist.ObserveMultiple(h.counts, h.sum_seconds);
    owned.insert({&family, &hist});
  }

  // One gauge series, when the configuration's newer bundle no longer has it (a counter now unsupported).
  void drop(const std::string& configuration, const std::string& family_name, const Labels& labels) {
    auto it = gauge_families_.find(family_name);
    if (it == gauge_families_.end() || !it->second->Has(labels)) return;
    auto& g = it->second->Add(labels);
    gauges_[configuration].erase({it->second, &g});
    it->second->Remove(&g);
  }
  // One histogram series (an instance whose repetitions now all fail has no buckets to show).
  void drop_histogram(const std::string& configuration, const std::string& family_name,
                      const Labels& labels) {
    auto it = histogram_families_.find(family_name);
    if (it == histogram_families_.end() || !it->second->Has(labels)) return;
    auto& h = it->second->Add(labels, latency_bounds_seconds());
    histograms_[configuration].erase({it->second, &h});
    it->second->Remove(&h);
  }

  void remove(const std::string& configuration) {
    if (auto it = gauges_.find(configuration); it != gauges_.end()) {
      for (auto [family, g] : it->second) family->Remove(g);
      gauges_.erase(it);
    }
    if (auto it = histograms_.find(configuration); it != histograms_.end()) {
      for (auto [family, h] : it->second) family->Remove(h);
      histograms_.erase(it);
    }
  }

 private:
  prometheus::Family<prometheus::Gauge>& gauge_family(const std::string& name, const std::string& help) {
    auto it = gauge_families_.find(name);
    if (it == gauge_families_.end())
      it = gauge_families_.emplace(name, &registered(prometheus::BuildGauge(), name, help)).first;
    return *it->second;
  }
  prometheus::Family<prometheus::Histogram>& histogram_family(const std::string& name,
                                                              const std::string& help) {
    auto it = histogram_families_.find(name);
    if (it == histogram_families_.end())
      it = histogram_families_.emplace(name, &registered(prometheus::BuildHistogram(), name, help)).first;
    return *it->second;
  }
  // prometheus-cpp refuses a name registered before with another type (a headline metric "latency_us"
  // would become a gauge named like the latency histogram): an Error naming it, not a bare invalid_argument.
  template <typename T>
  prometheus::Family<T>& registered(prometheus::detail::Builder<T> builder, const std::string& name,
                                    const std::string& help) {
    try {
      return builder.Name(name).Help(help).Register(registry_);
    } catch (const std::invalid_argument& e) {
      throw Error("exporter: cannot register metric family " + name + ": " + e.what());
    }
  }

  prometheus::Registry& registry_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauge_families_;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histogram_families_;
  std::map<std::string, std::set<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>>>
      gauges_;
  std::map<std::string,
           std::set<std::pair<prometheus::Family<prometheus::Histogram>*, prometheus::Histogram*>>>
      histograms_;
};

// An instance is its id and its resolved parameters' hash (params_hash): a sweep's instances differ in
// both, and two bundles of one id with other parameters must not share a series either. `box` is the
// exporter's host and class labels: a fleet's dashboards select boxes of one class, like with like.
Labels series_labels(const Labels& box, const std::string& configuration, const std::string& workload,
                     const std::string& instance_id, const std::string& params_hash) {
  Labels labels = box;
  labels.insert({{"configuration", configuration},
                 {"workload", workload},
                 {"instance_id", instance_id},
                 {"params_hash", params_hash}});
  return labels;
}
Labels series_labels(const Labels& box, const std::string& configuration, const HeadlineValue& v) {
  auto labels = series_labels(box, configuration, v.workload, v.instance_id, v.params_hash);
  labels.insert(v.labels.begin(), v.labels.end());
  return labels;
}
Labels series_labels(const Labels& box, const std::string& configuration, const LatencyBuckets& h) {
  return series_labels(box, configuration, h.workload, h.instance_id, h.params_hash);
}

// Family, instance (id and parameters) and any further labels (a status): one series.
std::pair<std::string, std::string> series_key(const HeadlineValue& v) {
  std::string id = v.instance_id + "\x1f" + v.params_hash;
  for (const auto& [k, value] : v.labels) id += "\x1f" + k + "=" + value;
  return {v.family, id};
}
std::pair<std::string, std::string> series_key(const LatencyBuckets& h) {
  return {h.family, h.instance_id + "\x1f" + h.params_hash};
}

// The series a configuration holds, keyed by series_key: what a push of that configuration sends.
struct ConfigurationSeries {
  std::map<std::pair<std::string, std::string>, HeadlineValue> headlines;
  std::map<std::pair<std::string, std::string>, LatencyBuckets> histograms;
  void merge(PublishedSeries s) {
    for (auto& v : s.headlines) headlines[series_key(v)] = std::move(v);
    for (auto& h : s.histograms) histograms[series_key(h)] = std::move(h);
  }
};

// Takes out of `series` the instances `keep` refuses (instances no longer in the campaign).
template <typename Keep>
void keep_instances(PublishedSeries& series, const Keep& keep) {
  std::erase_if(series.headlines, [&](const HeadlineValue& v) { return !keep(v.instance_id); });
  std::erase_if(series.histograms, [&](const LatencyBuckets& h) { return !keep(h.instance_id); });
}

// Sets every series it can; those that fail are taken out of `series` (what a configuration holds is what
// is exposed, and what a push sends) and their errors come back, joined.
std::string render(HeadlineFamilies& families, const Labels& box, const std::string& configuration,
                   ConfigurationSeries& series) {
  std::string errors;
  auto each = [&](auto& map) {
    for (auto it = map.begin(); it != map.end();) {
      try {
        const auto& v = it->second;
        families.set(configuration, series_labels(box, configuration, v), v);
        ++it;
      } catch (const Error& e) {
        errors += (errors.empty() ? "" : "; ") + std::string(e.what());
        it = map.erase(it);
      }
    }
  };
  each(series.headlines);
  each(series.histograms);
  return errors;
}

constexpr std::array<std::pair<DaemonState, const char*>, 5> kStates = {
    {{DaemonState::kStarting, "starting"},
     {DaemonState::kIdle, "idle"},
     {DaemonState::kRunning, "running"},
     {DaemonState::kBooting, "booting"},
     {DaemonState::kStopping, "stopping"}}};

// The daemon's state as a one-hot set (every state present, the current one 1), as OpenMetrics'
// StateSet: a panel or an alert reads `schedlab_daemon_state{state="booting"} == 1` with no value
// mapping, and a new state is a new label value, not a renumbering. Rendered at each scrape from one
// atomic value: five gauges set one after another would let a scrape in between see no state at 1, or two.
class StateCollector : public prometheus::Collectable {
 public:
  void set(DaemonState s) { state_.store(s); }
  std::vector<prometheus::MetricFamily> Collect() const override {
    const DaemonState now = state_.load();
    prometheus::MetricFamily family;
    family.name = "schedlab_daemon_state";
    family.help = "The daemon's current state: 1 for the state it is in, 0 for the others";
    family.type = prometheus::MetricType::Gauge;
    for (const auto& [st, name] : kStates) {
      prometheus::ClientMetric m;
      m.label.push_back({"state", name});
      m.gauge.value = st == now ? 1 : 0;
      family.metric.push_back(std::move(m));
    }
    return {family};
  }

 private:
  std::atomic<DaemonState> state_ = DaemonState::kStarting;
};

// The change points, replaced as a whole: rendered at each scrape from one list swapped under a lock, so a
// scrape sees the daemon's previous list or its new one, never a mix (registry gauges removed and added one
// by one would let a scrape catch a count without its change, or half of a new list), and a change the
// new list lacks has no series left behind.
class ChangePointCollector : public prometheus::Collectable {
 public:
  void set(std::vector<prometheus::MetricFamily> families) {
    std::lock_guard lock(mutex_);
    families_ = std::move(families);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mutex_);
    return families_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace

struct Exporter::Impl {
  ExporterSettings settings;
  std::string host;
  HostClass host_class;
  Labels box;  // {host, class}: on every headline and instance series
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::shared_ptr<ProcessCollector> process =
      std::make_shared<ProcessCollector>(HostPaths::live(), "self", ProcessClock::live());

  std::shared_ptr<StateCollector> state = std::make_shared<StateCollector>();
  std::shared_ptr<ChangePointCollector> change_points = std::make_shared<ChangePointCollector>();
  prometheus::Gauge& step_index = prometheus::BuildGauge()
                                      .Name("schedlab_daemon_step_index")
                                      .Help("0-based position in the plan of the step running or next")
                                      .Register(*registry)
                                      .Add({});
  prometheus::Gauge& plan_steps = prometheus::BuildGauge()
                                      .Name("schedlab_daemon_plan_steps")
                                      .Help("Steps in the current plan")
                                      .Register(*registry)
                                      .Add({});
  // Info-style: the key is text, so it is a label on a constant 1; absent when no step is current.
  prometheus::Family<prometheus::Gauge>& step_info =
      prometheus::BuildGauge()
          .Name("schedlab_daemon_step_info")
          .Help(
              "The current step's key (t<trial>/<configuration>/<instance>) as a label; absent between steps")
          .Register(*registry);
  prometheus::Gauge* step_info_series = nullptr;
  prometheus::Family<prometheus::Gauge>& next_run =
      prometheus::BuildGauge()
          .Name("schedlab_daemon_next_run_timestamp_seconds")
          .Help("When the next campaign run is scheduled, in seconds since the epoch; absent when none is")
          .Register(*registry);
  prometheus::Gauge* next_run_series = nullptr;
  // A gauge per path the daemon writes, 1 while it waits for space there ([campaign] on_disk_full).
  prometheus::Family<prometheus::Gauge>& disk_full =
      prometheus::BuildGauge()
          .Name("schedlab_daemon_disk_full")
          .Help(
              "1 while the daemon waits for space on the file system of this path (its output directory, "
              "its store), a write there having been refused: ENOSPC or EDQUOT; 0 otherwise")
          .Register(*registry);
  std::map<std::string, prometheus::Gauge*> disk_full_series;
  prometheus::Gauge& store_unavailable =
      prometheus::BuildGauge()
          .Name("schedlab_daemon_store_unavailable")
          .Help(
              "1 while the daemon's database does not answer and it retries with backoff (a step's bundle "
              "waits on disk to be indexed); 0 otherwise")
          .Register(*registry)
          .Add({});
  prometheus::Counter& started = step_counter("started", "Steps started");
  prometheus::Counter& finished =
      step_counter("finished", "Steps ended, whatever their outcome: recorded with a bundle, or failed");
  prometheus::Counter& failed =
      step_counter("failed", "Steps that failed: no result recorded (no bundle, a boot that went wrong)");
  prometheus::Counter& timed_out = step_counter("timed_out", "Steps recorded with a timed-out repetition");
  // Repetition outcomes apart from step outcomes: a step with one failed repetition of nine is recorded.
  prometheus::Family<prometheus::Counter>& step_repetitions =
      prometheus::BuildCounter()
          .Name("schedlab_steps_repetitions_total")
          .Help("Timed repetitions in the bundles of the daemon's recorded steps, by status")
          .Register(*registry);
  // Errors of the exporter itself, which the daemon logs and survives: a result is recorded before it
  // is published, so a publish or push that fails loses no result, only its series.
  prometheus::Family<prometheus::Counter>& exporter_errors =
      prometheus::BuildCounter()
          .Name("schedlab_exporter_errors_total")
          .Help("Errors publishing a bundle's series (operation=publish) or pushing them (operation=push)")
          .Register(*registry);
  prometheus::Counter& publish_errors = exporter_errors.Add({{"operation", "publish"}});
  prometheus::Counter& push_errors = exporter_errors.Add({{"operation", "push"}});
  // Info-style, as client_golang's build_info: what a dashboard lists classes from, and what a query joins
  // on (instance) to select by class the daemon series that carry no host label (state, step counters).
  prometheus::Family<prometheus::Gauge>& daemon_info =
      prometheus::BuildGauge()
          .Name("schedlab_daemon_info")
          .Help(
              "1, labelled with this daemon's host, its host class (the label, else the shape), the "
              "shape (sockets, cores, SMT, NUMA nodes, CPU model) and schedlab's version")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& published =
      prometheus::BuildGauge()
          .Name("schedlab_headline_published_timestamp_seconds")
          .Help("When the configuration's headline series were last published (a stale series shows here)")
          .Register(*registry);

  std::mutex mutex;  // publish() and push() may come from different threads than the state setters
  HeadlineFamilies families{*registry};
  std::list<std::string> newest;  // configurations, most recently published first
  std::map<std::string, ConfigurationSeries> series;
  std::optional<std::set<std::string>> campaign_instances;  // set_instances(); nullopt: every instance
  std::set<std::string> evicted;  // configurations whose Pushgateway group is still to be deleted

  bool kept(const std::string& instance_id) const {
    return !campaign_instances || campaign_instances->count(instance_id) > 0;
  }

  // Takes out of a configuration's series, and out of the exposition, each series `leaves(key, series)`
  // picks: headline gauges and latency histograms alike, only the family call differs.
  template <typename Leaves>
  void drop_series(const std::string& configuration, ConfigurationSeries& mine, const Leaves& leaves) {
    auto prune = [&](auto& map, auto drop) {
      for (auto it = map.begin(); it != map.end();) {
        if (!leaves(it->first, it->second)) {
          ++it;
          continue;
        }
        drop(configuration, it->second.family, series_labels(box, configuration, it->second));
        it = map.erase(it);
      }
    };
    prune(mine.headlines, [&](const auto&... a) { families.drop(a...); });
    prune(mine.histograms, [&](const auto&... a) { families.drop_histogram(a...); });
  }

  // Last: an exposer serving half-built metrics would be a bug.
  ListenAddress address;
  std::unique_ptr<prometheus::Exposer> exposer;

  explicit Impl(const ExporterSettings& s)
      : settings(s),
        host(s.host.empty() ? machine_hostname() : s.host),
        host_class(s.host_class.shape.empty() ? this_host_class(HostPaths::live(), s.host_class.label)
                                              : s.host_class),
        box{{"host", host}, {"class", host_class.name()}} {
    if (settings.configurations_per_host < 1)
      throw InputError("exporter: configurations_per_host must be at least 1, not " +
                       std::to_string(settings.configurations_per_host));
    for (const char* st : {status::kOk, status::kFailed, status::kTimeout})
      step_repetitions.Add({{"status", st}});
    daemon_info
        .Add({{"host", host},
              {"class", host_class.name()},
              {"shape", host_class.shape},
              {"version", build_info::kVersion}})
        .Set(1);
    if (settings.listen.empty()) return;
    address = parse_listen(settings.listen);
    probe_bind(address);
    try {
      exposer = std::make_unique<prometheus::Exposer>(
          std::vector<std::string>{"listening_ports", address.civetweb(), "num_threads", "2"});
    } catch (const std::exception& e) {
      // The probe bound, so civetweb itself refused: Debian 12's is built without IPv6 support.
      throw Error("exporter: cannot listen on " + settings.listen + ": " + e.what() +
                  (address.ipv6
                       ? " (the address bound as a plain socket: this civetweb may lack IPv6 support; "
                         "listen on an IPv4 address)"
                       : ""));
    }
    exposer->RegisterCollectable(registry);
    exposer->RegisterCollectable(state);
    exposer->RegisterCollectable(process);
    exposer->RegisterCollectable(change_points);
  }

  Labels published_labels(const std::string& configuration) const {
    auto labels = box;
    labels.emplace("configuration", configuration);
    return labels;
  }

  prometheus::Counter& step_counter(const std::string& what, const std::string& help) {
    return prometheus::BuildCounter()
        .Name("schedlab_steps_" + what + "_total")
        .Help(help)
        .Register(*registry)
        .Add({});
  }
};

Exporter::Exporter(const ExporterSettings& settings) : impl_(std::make_unique<Impl>(settings)) {}
Exporter::~Exporter() {
  if (!impl_->exposer) return;
  // civetweb's mg_stop() sets a stop flag and joins its listener thread, which sees the flag only when its
  // poll() returns: after a 2 s timeout, or at once on a connection. Connecting until the exposer is gone
  // makes stopping take milliseconds (the daemon's shutdown, and each test's exporter).
  const auto& address = impl_->address;
  const int port = this->port();
  std::atomic<bool> stopped = false;
  std::thread waker([&] {
    while (!stopped) {
      poke(address, port);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  impl_->exposer.reset();
  stopped = true;
  waker.join();
}

void Exporter::set_state(DaemonState state) {
  impl_->state->set(state);
}

void Exporter::set_current_step(const std::string& step_key, int index, int total) {
  std::lock_guard lock(impl_->mutex);
  impl_->step_index.Set(index);
  impl_->plan_steps.Set(total);
  if (impl_->step_info_series) impl_->step_info.Remove(impl_->step_info_series);
  impl_->step_info_series = nullptr;
  if (!step_key.empty()) {
    impl_->step_info_series = &impl_->step_info.Add({{"step", step_key}});
    impl_->step_info_series->Set(1);
  }
}

void Exporter::set_next_run(std::optional<std::chrono::system_clock::time_point> when) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->next_run_series) impl_->next_run.Remove(impl_->next_run_series);
  impl_->next_run_series = nullptr;
  if (when) {
    impl_->next_run_series = &impl_->next_run.Add({});
    impl_->next_run_series->Set(std::chrono::duration<double>(when->time_since_epoch()).count());
  }
}

void Exporter::set_disk_paths(const std::vector<std::string>& paths) {
  std::lock_guard lock(impl_->mutex);
  for (const auto& path : paths)
    if (!impl_->disk_full_series.count(path))
      impl_->disk_full_series[path] = &impl_->disk_full.Add({{"path", path}});
}

void Exporter::set_disk_full(const std::string& path) {
  std::lock_guard lock(impl_->mutex);
  if (!path.empty() && !impl_->disk_full_series.count(path))
    impl_->disk_full_series[path] = &impl_->disk_full.Add({{"path", path}});
  for (auto& [p, gauge] : impl_->disk_full_series) gauge->Set(p == path ? 1 : 0);
}

void Exporter::set_store_unavailable(bool unavailable) {
  impl_->store_unavailable.Set(unavailable ? 1 : 0);
}

void Exporter::set_plan_steps(int total) {
  impl_->plan_steps.Set(total);
}

void Exporter::count_started() {
  impl_->started.Increment();
}
void Exporter::count_step_recorded(const Bundle& bundle) {
  std::map<std::string, int> by_status;
  for (const auto& in : bundle.instances)
    for (const auto& r : in.repetitions)
      if (!r.warmup) ++by_status[r.status];
  std::lock_guard lock(impl_->mutex);
  impl_->finished.Increment();
  if (by_status[status::kTimeout] > 0) impl_->timed_out.Increment();
  for (const auto& [st, n] : by_status)
    if (n > 0) impl_->step_repetitions.Add({{"status", st}}).Increment(n);
}
void Exporter::count_step_failed() {
  impl_->finished.Increment();
  impl_->failed.Increment();
}

void Exporter::set_instances(const std::set<std::string>& instance_ids) {
  std::lock_guard lock(impl_->mutex);
  impl_->campaign_instances = instance_ids;
  for (auto& [configuration, mine] : impl_->series)
    impl_->drop_series(configuration, mine,
                       [&](const auto&, const auto& series) { return !impl_->kept(series.instance_id); });
}

void Exporter::set_change_points(const std::vector<ExportedChange>& changes) {
  std::string errors;
  impl_->change_points->set(change_point_families(changes, impl_->host_class.name(), errors));
  if (!errors.empty()) throw Error("exporter: change points: " + errors);
}

void Exporter::count_publish_error() {
  impl_->publish_errors.Increment();
}

void Exporter::publish(const Bundle& bundle, const std::string& configuration) {
  auto published = published_series(bundle);
  std::lock_guard lock(impl_->mutex);
  keep_instances(published, [&](const std::string& id) { return impl_->kept(id); });
  ConfigurationSeries fresh;
  fresh.merge(std::move(published));
  auto& mine = impl_->series[configuration];
  // An instance's series are the newest bundle's: one it no longer has goes (no old value stays on show:
  // an instance whose repetitions now all fail keeps no median and no buckets, only its failure counts).
  std::set<std::string> instances;
  for (const auto& in : bundle.instances) instances.insert(in.id);
  impl_->drop_series(configuration, mine, [&](const auto& key, const auto& series) {
    if (!instances.count(series.instance_id)) return false;
    if constexpr (std::is_same_v<std::decay_t<decltype(series)>, HeadlineValue>)
      return !fresh.headlines.count(key);
    else
      return !fresh.histograms.count(key);
  });
  const auto errors = render(impl_->families, impl_->box, configuration, fresh);
  for (auto& [key, v] : fresh.headlines) mine.headlines[key] = std::move(v);
  for (auto& [key, h] : fresh.histograms) mine.histograms[key] = std::move(h);
  impl_->published.Add(impl_->published_labels(configuration))
      .Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());

  auto& newest = impl_->newest;
  newest.remove(configuration);
  newest.push_front(configuration);
  impl_->evicted.erase(configuration);
  while (newest.size() > static_cast<std::size_t>(impl_->settings.configurations_per_host)) {
    const auto old = newest.back();
    newest.pop_back();
    impl_->families.remove(old);
    impl_->series.erase(old);
    if (!impl_->settings.pushgateway.empty())
      impl_->evicted.insert(old);  // its group, deleted at the next push
    auto& stamp = impl_->published.Add(impl_->published_labels(old));
    impl_->published.Remove(&stamp);
  }
  // After the bookkeeping, so that what did publish is bounded like the rest.
  if (!errors.empty()) throw Error("exporter: publishing " + configuration + ": " + errors);
}

std::string Exporter::push(const Bundle& bundle, const std::string& configuration) {
  if (impl_->settings.pushgateway.empty()) return {};
  auto error = push_group(bundle, configuration);
  if (!error.empty()) impl_->push_errors.Increment();
  return error;
}

std::string Exporter::push_group(const Bundle& bundle, const std::string& configuration) {
  try {
    const auto timeout = std::chrono::milliseconds(static_cast<long>(impl_->settings.push_timeout_s * 1000));
    auto group = [&](const std::string& c) {
      return pushgateway_group_url(impl_->settings.pushgateway, "schedlab",
                                   {{"host", impl_->host}, {"configuration", c}});
    };
    // Configurations evicted from the newest N leave the Pushgateway too (else they stay there for
    // ever); one that cannot be deleted now is tried again at the next push.
    std::set<std::string> evicted;
    {
      std::lock_guard lock(impl_->mutex);
      evicted = impl_->evicted;
    }
    std::string errors;
    for (const auto& old : evicted) {
      if (auto err = send_exposition(group(old), "DELETE", "", timeout); !err.empty()) {
        errors += (errors.empty() ? "" : "; ") + err;
        continue;
      }
      std::lock_guard lock(impl_->mutex);
      impl_->evicted.erase(old);
    }
    // The configuration's whole group, as this exporter holds it, PUT: the Pushgateway then holds
    // exactly these series for it, so a family or an instance gone from /metrics goes there too
    // (a POST would keep every family it did not resend).
    ConfigurationSeries series;
    bool held = false;
    {
      std::lock_guard lock(impl_->mutex);
      if (auto it = impl_->series.find(configuration); it != impl_->series.end()) {
        series = it->second;
        held = true;
      }
    }
    if (!held) {  // pushed without being published: the bundle's own series
      auto fresh = published_series(bundle);
      std::lock_guard lock(impl_->mutex);
      keep_instances(fresh, [&](const std::string& id) { return impl_->kept(id); });
      series.merge(std::move(fresh));
    }
    auto registry = std::make_shared<prometheus::Registry>();
    HeadlineFamilies families(*registry);
    if (auto render_errors = render(families, impl_->box, configuration, series); !render_errors.empty())
      return "pushgateway " + impl_->settings.pushgateway + ": " + render_errors;
    if (auto err = send_exposition(group(configuration), "PUT",
                                   prometheus::TextSerializer().Serialize(registry->Collect()), timeout);
        !err.empty())
      errors += (errors.empty() ? "" : "; ") + err;
    return errors;
  } catch (const InputError& e) {  // names the URL already
    return e.what();
  } catch (const std::exception& e) {
    return "pushgateway " + impl_->settings.pushgateway + ": " + e.what();
  }
}

int Exporter::port() const {
  if (!impl_->exposer) return -1;
  const auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? -1 : ports.front();
}

}  // namespace schedlab
