#include "workloads/fairness/weights.hpp"

#include <charconv>
#include <cmath>
#include <map>

#include "core/error.hpp"

namespace schedlab::fairness {

int weight_of_nice(int nice) {
  return kNiceToWeight.at(static_cast<std::size_t>(nice + 20));
}

std::vector<int> parse_nices(const std::string& text, const std::string& name) {
  std::vector<int> out;
  std::size_t begin = 0;
  for (int k = 1;; ++k) {
    const auto end = std::min(text.find(',', begin), text.size());
    std::string entry = text.substr(begin, end - begin);
    while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    int v = 0;
    const char* first = entry.data() + (entry.size() > 1 && entry.front() == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(first, entry.data() + entry.size(), v);
    if (entry.empty() || ec != std::errc() || p != entry.data() + entry.size() || v < -20 || v > 19)
      throw InputError(name + ": entry " + std::to_string(k) + " ('" + entry +
                       "') is not a nice value (an integer from -20 to 19)");
    out.push_back(v);
    if (end == text.size()) break;
    begin = end + 1;
  }
  if (out.size() < static_cast<std::size_t>(kMinTasks) || out.size() > static_cast<std::size_t>(kMaxTasks))
    throw InputError(name + ": " + std::to_string(out.size()) + " entries; give from " +
                     std::to_string(kMinTasks) + " to " + std::to_string(kMaxTasks) +
                     " nice values, one per task (e.g. 0,5)");
  return out;
}

std::vector<TaskShare> shares(const std::vector<int>& cpus, const std::vector<int>& nices,
                              const std::vector<double>& cpu_ns) {
  std::map<int, double> group_weight, group_cpu;
  std::vector<TaskShare> out(nices.size());
  for (std::size_t i = 0; i < nices.size(); ++i) {
    auto& t = out[i];
    t.cpu = cpus.at(i);
    t.nice = nices[i];
    t.weight = weight_of_nice(t.nice);
    t.cpu_ns = cpu_ns.at(i);
    group_weight[t.cpu] += t.weight;
    group_cpu[t.cpu] += t.cpu_ns;
  }
  for (auto& t : out) {
    if (group_cpu[t.cpu] <= 0)
      throw Error("the tasks on CPU " + std::to_string(t.cpu) + " got no CPU time in the window");
    t.share = t.cpu_ns / group_cpu[t.cpu];
    t.entitled = t.weight / group_weight[t.cpu];
  }
  return out;
}

double jain_index(const std::vector<TaskShare>& tasks) {
  double sum = 0, sum_sq = 0;
  for (const auto& t : tasks) {
    const double x = t.share / t.entitled;
    sum += x;
    sum_sq += x * x;
  }
  return sum_sq > 0 ? sum * sum / (static_cast<double>(tasks.size()) * sum_sq) : 0.0;
}

double max_share_error(const std::vector<TaskShare>& tasks) {
  double worst = 0;
  for (const auto& t : tasks) worst = std::max(worst, std::abs(t.error()));
  return worst;
}

}  // namespace schedlab::fairness
