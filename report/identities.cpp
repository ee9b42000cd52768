// Who ran what, where and when: enough to find a bundle again and to tell two kernels apart at a glance.
#include "report/report_parts.hpp"

namespace schedlab::report {
namespace {

nlohmann::json value_at(const nlohmann::json& j, const char* pointer) {
  nlohmann::json::json_pointer p(pointer);
  return j.contains(p) ? j.at(p) : nlohmann::json();
}

nlohmann::json bundle_identity(const LoadedBundle& loaded) {
  const Bundle& b = loaded.bundle;
  return {{"path", loaded.path.string()},
          {"label", b.label},
          {"run_id", b.run_id},
          {"trial", b.trial},
          {"trials", b.trials},
          {"smoke", b.smoke},
          {"started_at", b.started_at},
          {"finished_at", b.finished_at},
          {"boot_id", b.boot_id},
          {"kernel_release", value_at(b.kernel, "/release")},
          {"kernel_version", value_at(b.kernel, "/version")},
          {"hostname", value_at(b.host, "/hostname")},
          {"cpu_model", value_at(b.host, "/cpu_model")},
          {"fingerprint", value_at(b.host, "/fingerprint")},
          {"scheduler", value_at(b.configuration, "/scheduler")},
          {"configuration_hash", value_at(b.configuration, "/hash")}};
}

}  // namespace

nlohmann::json side_identities(const std::vector<Side>& sides) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < sides.size(); ++i) {
    nlohmann::json bundles = nlohmann::json::array();
    for (const auto& b : sides[i].bundles) bundles.push_back(bundle_identity(b));
    const char* role = sides.size() == 1 ? "only" : i == 0 ? "base" : "other";
    out.push_back({{"name", sides[i].name}, {"spec", sides[i].spec}, {"role", role}, {"bundles", bundles}});
  }
  return out;
}

}  // namespace schedlab::report
