// Large GEMM outputs are checked on a sample: every element when the product
// is small, else the first and last row and column of each batch plus 2048
// random elements (flat indices into [L][M][N]).
#pragma once
#include <cstdint>
#include <vector>

namespace kestrel::testing {

std::vector<int64_t> sample_positions(int64_t l, int64_t m, int64_t n, int64_t k,
                                      int64_t full_limit = int64_t(1) << 28);

}  // namespace kestrel::testing
