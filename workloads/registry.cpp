#include "workloads/registry.hpp"

#include "core/error.hpp"
#include "workloads/chat/chat.hpp"
#include "workloads/fairness/fairness.hpp"
#include "workloads/groups/groups.hpp"
#include "workloads/kernbench/kernbench.hpp"
#include "workloads/micro/micro.hpp"
#include "workloads/requests/requests.hpp"
#include "workloads/sdet/sdet.hpp"
#include "workloads/tbench/tbench.hpp"
#include "workloads/wakeup/wakeup.hpp"
#include "workloads/yield/yield.hpp"

namespace schedlab {

const std::vector<WorkloadEntry>& builtin_workloads() {
  static const std::vector<WorkloadEntry> kTable = {
      {"yield", [] { return std::make_unique<YieldWorkload>(); }},
      {"kernbench", [] { return std::make_unique<KernbenchWorkload>(); }},
      {"wakeup", [] { return std::make_unique<WakeupWorkload>(); }},
      {"micro", [] { return std::make_unique<MicroWorkload>(); }},
      {"tbench", [] { return std::make_unique<TbenchWorkload>(); }},
      {"chat", [] { return std::make_unique<ChatWorkload>(); }},
      {"requests", [] { return std::make_unique<RequestsWorkload>(); }},
      {"fairness", [] { return std::make_unique<FairnessWorkload>(); }},
      {"sdet", [] { return std::make_unique<SdetWorkload>(); }},
      {"groups", [] { return std::make_unique<GroupsWorkload>(); }},
  };
  return kTable;
}

std::unique_ptr<Workload> make_workload(const std::string& name) {
  std::string known;
  for (const auto& e : builtin_workloads()) {
    if (e.name == name) return e.make();
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw InputError("unknown workload '" + name + "' (known: " + known + ")");
}

}  // namespace schedlab
