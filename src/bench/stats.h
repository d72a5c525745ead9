// Order statistics of repeated timings. Medians and percentiles, not means:
// one preempted or throttled run must not move the reported time.
#pragma once
#include <vector>

namespace kestrel::bench {

struct Stats {
  int count = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0;
};

// q in [0, 1] of ascending `sorted`, interpolating linearly between the two
// nearest ranks (numpy's default), so the median of an even count is the
// mean of the two middle values. Empty input gives 0.
double percentile(const std::vector<double>& sorted, double q);

Stats summarize(std::vector<double> samples);

}  // namespace kestrel::bench
