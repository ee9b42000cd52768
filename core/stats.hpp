#pragma once
#include <vector>

namespace schedlab {

struct Summary {
  std::size_t n = 0;
  double median = 0, mean = 0, min = 0, max = 0;
  double cv = 0;  // sample standard deviation / mean; 0 when n < 2
};

Summary summarize(std::vector<double> values);
double median(std::vector<double> values);
double sample_sd(const std::vector<double>& values);  // n - 1 in the denominator; 0 when n < 2

}  // namespace schedlab
