#include "bench/stats.h"

#include <algorithm>
#include <cmath>

namespace kestrel::bench {

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = std::clamp(q, 0.0, 1.0) * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = int(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.p10 = percentile(samples, 0.10);
  s.median = percentile(samples, 0.50);
  s.p90 = percentile(samples, 0.90);
  return s;
}

}  // namespace kestrel::bench
