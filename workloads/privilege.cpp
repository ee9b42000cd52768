#include "workloads/privilege.hpp"

#include <sched.h>

#include "workloads/common/task_setup.hpp"

namespace schedlab {
namespace {

bool is_key(const std::string& key, const std::string& name) {
  return key == name || (key.size() > name.size() + 1 && key.ends_with("_" + name));
}

}  // namespace

std::string root_needed_for_scheduling(const ParamValues& params) {
  if (!params.is_object()) return {};
  for (const auto& [key, value] : params.items()) {
    if (is_key(key, "policy") && value.is_string()) {
      const auto text = value.get<std::string>();
      const int policy = parse_policy(text).policy;
      if (policy == SCHED_FIFO || policy == SCHED_RR)
        return key + "=" + text + ": a real-time policy needs CAP_SYS_NICE";
    }
    if (is_key(key, "nice") && value.is_number_integer() && value.get<long>() < 0)
      return key + "=" + std::to_string(value.get<long>()) + ": a negative nice value needs CAP_SYS_NICE";
  }
  return {};
}

}  // namespace schedlab
