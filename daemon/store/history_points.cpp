#include "daemon/store/history_points.hpp"

#include "core/stats.hpp"

namespace schedlab {

void HistoryPoints::add(std::int64_t bundle_id, HistoryPoint row, double value) {
  // One point per bundle and instance, an instance being its id and its parameters' hash: a sweep's
  // instances (and one id measured with other parameters) are never merged into one median.
  if (bundle_id != current_bundle_ || out_.back().instance_id != row.instance_id ||
      out_.back().params_hash != row.params_hash) {
    flush();
    current_bundle_ = bundle_id;
    out_.push_back(std::move(row));
  }
  values_.push_back(value);
}

void HistoryPoints::flush() {
  if (values_.empty()) return;
  out_.back().median = median(values_);
  out_.back().repetitions = static_cast<int>(values_.size());
  values_.clear();
}

std::vector<HistoryPoint> HistoryPoints::take() {
  flush();
  return std::move(out_);
}

}  // namespace schedlab
