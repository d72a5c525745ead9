// C ABI of the FP8 GEMM with a fused add (include/kestrel/c_api.h).
#include <string>
#include <utility>

#include "c_api/c_api_common.h"
#include "kestrel/c_api.h"
#include "kestrel/fp8_gemm.h"

using namespace kestrel;
using namespace kestrel::c_api;

namespace {

// The C ABI's dense views of one call, NULLs refused; alpha or device scales.
template <typename Alpha>
int fp8_call(const void* a, const void* b, const Alpha& alpha, const void* r, void* d,
             int64_t batches, int64_t m, int64_t n, int64_t k, void* stream) {
  for (auto [p, name] : {std::pair<const void*, const char*>{a, "a"}, {b, "b"}, {d, "d"}})
    if (!p) return report(Status::InvalidArgument(std::string(name) + ": is NULL"));
  const TensorView rv = view(r, DType::kBF16, {batches, m, n});
  return report(fp8_gemm_add(view(a, DType::kE4M3, {batches, m, k}),
                             view(b, DType::kE4M3, {batches, n, k}), alpha, r ? &rv : nullptr,
                             view(d, DType::kBF16, {batches, m, n}), stream_of(stream)));
}

}  // namespace

extern "C" {

int kestrel_fp8_gemm_add(const void* a, const void* b, float alpha, const void* r, void* d,
                         int64_t batches, int64_t m, int64_t n, int64_t k, void* stream) {
  return fp8_call(a, b, alpha, r, d, batches, m, n, k, stream);
}

int kestrel_fp8_gemm_add_scaled(const void* a, const void* b, const float* scale_a,
                                const float* scale_b, const void* r, void* d, int64_t batches,
                                int64_t m, int64_t n, int64_t k, void* stream) {
  return fp8_call(a, b, Fp8DeviceScales{scale_a, scale_b}, r, d, batches, m, n, k, stream);
}

}  // extern "C"
