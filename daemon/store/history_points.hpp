#pragma once
// The rows of a store's history query, ordered by bundle, instance id and params hash, grouped into one
// HistoryPoint per bundle and instance with the median of its values: what both stores' history() return.
#include <cstdint>
#include <vector>

#include "daemon/store/store.hpp"

namespace schedlab {

class HistoryPoints {
 public:
  // `row`: the point's fields (median and repetitions are computed here); `value`: one repetition's.
  void add(std::int64_t bundle_id, HistoryPoint row, double value);
  std::vector<HistoryPoint> take();

 private:
  void flush();

  std::vector<HistoryPoint> out_;
  std::vector<double> values_;
  std::int64_t current_bundle_ = -1;
};

}  // namespace schedlab
