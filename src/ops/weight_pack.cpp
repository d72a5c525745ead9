#include "ops/weight_pack.h"

#include <algorithm>
#include <string>

#include "common/nvfp4_weight_order.cuh"
#include "ops/gemm_common.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/nvfp4_operand.h"
#include "ops/validate.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel {
namespace {

struct WeightPackParams {  // mirrors kernels/nvfp4_weight_pack.cuh
  Nvfp4Operand w;
  long long n, k, batches;
  void* out;
};

}  // namespace

namespace ops {

Nvfp4View packed_weight_view(const GemmPackedWeights& w) {
  // The scale codes live inside the packed buffer; the view's linear scales
  // (over the same buffer) only carry the shape for validate_gemm.
  void* data = const_cast<void*>(w.values);
  Nvfp4View v;
  v.values = TensorView::dense(data, DType::kE2M1x2, {w.batches, w.n, w.k / 2});
  v.scales = TensorView::dense(data, DType::kE4M3, {w.batches, w.n, w.k / 16});
  v.layout = ScaleLayout::kLinear;
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
    const bool blocked = w.layout == ScaleLayout::kBlocked;
    rt::Kernel kernel;
    KESTREL_RETURN_IF_ERROR(rt::Kernel::get(ops::weight_pack_kernel_spec(blocked), &kernel));
    WeightPackParams p{};
    p.w = ops::nvfp4_operand(w);
    p.n = n;
    p.k = k;
    p.batches = batches;
    p.out = out;
    rt::LaunchShape ls;
    ls.block = dim3(256);
    ls.grid = dim3(unsigned(std::min<int64_t>(ops::ceil_div(need / 16, 256), 8 * dev->sm_count)));
    KESTREL_RETURN_IF_ERROR(kernel(ls, stream, p));
  }
  GemmPackedWeights r;
  r.values = out;
  r.batches = batches;
  r.n = n;
  r.k = k;
  r.global_scale = w.global_scale;
  *packed = r;
  return Status::Ok();
}

}  // namespace kestrel
