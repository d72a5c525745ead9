#include "runtime/tma.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <string>

namespace kestrel::rt {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

Status make_tma_map(const void* base, const TmaMapSpec& spec, CUtensorMap* out) {
  auto fn = encode_fn();
  if (!fn) return Status::Unsupported("cuTensorMapEncodeTiled is not available from the driver");
  if ((reinterpret_cast<uintptr_t>(base) & 15) != 0)
    return Status::InvalidArgument("TMA base address must be 16-byte aligned");
  for (int i = 0; i + 1 < spec.rank; ++i)
    if (spec.strides_bytes[i] % 16 != 0)
      return Status::InvalidArgument("TMA row stride must be a multiple of 16 bytes, got " +
                                     std::to_string(spec.strides_bytes[i]));
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  CUresult r = fn(out, spec.dtype, cuuint32_t(spec.rank), const_cast<void*>(base), spec.dims,
                  spec.strides_bytes, spec.box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  spec.swizzle, spec.l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status::InvalidArgument("cuTensorMapEncodeTiled failed with CUresult " +
                                   std::to_string(int(r)));
  return Status::Ok();
}

}  // namespace kestrel::rt
