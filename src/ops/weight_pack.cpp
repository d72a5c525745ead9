#include "ops/weight_pack.h"

#include <algorithm>
#include <string>

#include "common/nvfp4_weight_order.cuh"
#include "ops/gemm_common.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/validate.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel {

namespace ops {

Nvfp4View packed_weight_view(const GemmPackedWeights& w) {
  Nvfp4View v;
  // The rank of the weights it came from: linear scales must match it.
  const bool rank3 = w.layout == ScaleLayout::kLinear ? w.scales.rank == 3 : w.batches != 1;
  void* data = const_cast<void*>(w.values);
  v.values = rank3 ? TensorView::dense(data, DType::kE2M1x2, {w.batches, w.n, w.k / 2})
                   : TensorView::dense(data, DType::kE2M1x2, {w.n, w.k / 2});
  v.scales = w.scales;
  v.layout = w.layout;
  v.global_scale = w.global_scale;
  return v;
}

}  // namespace ops

int64_t gemm_packed_weight_bytes(int64_t n, int64_t k, int64_t batches) {
  return batches * packed_weight_batch_bytes(n, k);
}

Status pack_gemm_weights(const Nvfp4View& w, void* out, int64_t out_bytes, cudaStream_t stream,
                         GemmPackedWeights* packed) {
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(w, "w"));
  if (packed == nullptr) return Status::InvalidArgument("packed: must not be null");
  const int64_t batches = w.batches(), n = w.rows(), k = w.k();
  KESTREL_RETURN_IF_ERROR(ops::check_positive(k, "K"));
  KESTREL_RETURN_IF_ERROR(ops::check_multiple(k, 64, "K"));
  KESTREL_RETURN_IF_ERROR(ops::check_aligned(w.values, 16, "w.values"));
  const int64_t need = gemm_packed_weight_bytes(n, k, batches);
  if (out_bytes < need)
    return Status::InvalidArgument("out_bytes: must be at least gemm_packed_weight_bytes = " +
                                   std::to_string(need) + ", got " + std::to_string(out_bytes));
  if (need > 0 && out == nullptr) return Status::InvalidArgument("out: must not be null");
  if (reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return Status::InvalidArgument("out: must be 16-byte aligned");
  if (need > 0) {
    const rt::DeviceInfo* dev = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
    rt::Kernel kernel;
    KESTREL_RETURN_IF_ERROR(rt::Kernel::get(ops::weight_pack_kernel_spec(), &kernel));
    const ops::Shape3 v = ops::shape3(w.values);
    rt::LaunchShape ls;
    ls.block = dim3(256);
    ls.grid = dim3(unsigned(std::min<int64_t>(ops::ceil_div(need / 16, 256), 8 * dev->sm_count)));
    KESTREL_RETURN_IF_ERROR(kernel(ls, stream, w.values.data, (long long)v.batch_stride,
                                   (long long)v.row_stride, (long long)n, (long long)k,
                                   (long long)batches, out));
  }
  GemmPackedWeights r;
  r.values = out;
  r.batches = batches;
  r.n = n;
  r.k = k;
  r.scales = w.scales;
  r.layout = w.layout;
  r.global_scale = w.global_scale;
  *packed = r;
  return Status::Ok();
}

}  // namespace kestrel
