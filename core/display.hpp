#pragma once
// Values and names as people read them, in the run summary and the diff.
#include <string>

namespace schedlab {

// How a value of `unit` near a given value is written: multiplied by `factor`, then `magnitude` ("k") and
// `unit` (" us/op", "%", "/op", " msg/s"). Times take the unit that keeps them between 1 and 1000, other
// large numbers k, M or G.
struct DisplayScale {
  double factor = 1;
  std::string magnitude;
  std::string unit;
};
DisplayScale display_scale(double v, const std::string& unit);
// `v` in `scale`, three significant digits, a sign when asked: "+12.3k"; "0" for zero.
std::string scaled_number(double v, const DisplayScale& scale, bool sign);

// 3.92 us, 1.25 ms, 12.3k msg/s, 98.5%, 1.00/op.
std::string human_value(double v, const std::string& unit);

// An instance as a column shows it: a sweep's "micro.benchmarks=pipe:other-core" as
// "micro pipe:other-core" and "yield.threads=2" as "yield threads=2" (a bare number needs its key),
// other ids as they are.
std::string instance_label(const std::string& id, const std::string& workload);

}  // namespace schedlab
