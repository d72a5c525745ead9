#include "sampled_check.h"

#include "random.h"

namespace kestrel::testing {

std::vector<int64_t> sample_positions(int64_t l, int64_t m, int64_t n, int64_t k,
                                      int64_t full_limit) {
  std::vector<int64_t> idx;
  const int64_t total = l * m * n;
  if (m * n * k * l <= full_limit) {
    for (int64_t i = 0; i < total; ++i) idx.push_back(i);
    return idx;
  }
  for (int64_t b = 0; b < l; ++b) {
    for (int64_t j = 0; j < n; ++j) {
      idx.push_back((b * m + 0) * n + j);
      idx.push_back((b * m + m - 1) * n + j);
    }
    for (int64_t i = 0; i < m; ++i) {
      idx.push_back((b * m + i) * n + 0);
      idx.push_back((b * m + i) * n + n - 1);
    }
  }
  Rng rng(7);
  for (int i = 0; i < 2048; ++i) idx.push_back(rng.below(total));
  return idx;
}

}  // namespace kestrel::testing
