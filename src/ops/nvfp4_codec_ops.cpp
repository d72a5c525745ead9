// Host side of quantize / dequantize / scale-layout conversion: validate,
// pick the instantiation, launch.
#include <algorithm>
#include <string>
#include <tuple>

#include "common/nvfp4_codec.cuh"
#include "common/row_segments.cuh"
#include "kestrel/nvfp4.h"
#include "ops/validate.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel {
namespace {

struct Strides3 {  // mirrors kestrel::Strides3 in kernels/nvfp4_quantize.cuh
  long long batch, row;
};

constexpr int64_t kMaxBatches = 65535;  // grid.y carries the batch
constexpr int64_t kMaxRowItems = int64_t(1) << 32;

const char* element_type(DType t) {
  switch (t) {
    case DType::kBF16: return "__nv_bfloat16";
    case DType::kF16: return "__half";
    default: return "float";
  }
}

Strides3 strides_of(const ops::Shape3& s) { return {s.batch_stride, s.row_stride}; }

Strides3 linear_scale_strides(const Nvfp4View& t) {
  if (t.layout == ScaleLayout::kBlocked) return {0, 0};
  return strides_of(ops::shape3(t.scales));
}

rt::LaunchShape grid_for(int64_t items_per_batch, int64_t batches, int sm_count) {
  rt::LaunchShape shape;
  shape.block = dim3(256);
  const int64_t blocks = (items_per_batch + 255) / 256;
  // Enough CTAs to cover the SMs several times over; the kernels grid-stride.
  const int64_t cap = std::max<int64_t>(1, int64_t(sm_count) * 16 / std::max<int64_t>(1, batches));
  shape.grid = dim3(unsigned(std::min(blocks, std::max<int64_t>(cap, 1))), unsigned(batches));
  return shape;
}

// The 2-byte quantize and every dequantize: 8-warp CTAs over row_segments
// items, at most `cap` CTAs per batch (they grid-stride).
rt::LaunchShape segment_grid(int64_t rows, int64_t k, int64_t batches, int64_t cap) {
  rt::LaunchShape shape;
  shape.block = dim3(256);
  const int64_t ctas = (row_segment_items(int(k), rows) + 7) / 8;
  shape.grid = dim3(unsigned(std::max<int64_t>(1, std::min(ctas, cap))), unsigned(batches));
  return shape;
}

Status check_codec_shapes(const TensorView& dense, const char* dense_name, const Nvfp4View& q,
                          const char* q_name) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(q, q_name));
  KESTREL_RETURN_IF_ERROR(check_dtype(dense, {DType::kF32, DType::kBF16, DType::kF16}, dense_name));
  KESTREL_RETURN_IF_ERROR(check_rank(dense, q.values.rank, q.values.rank, dense_name));
  KESTREL_RETURN_IF_ERROR(check_row_major(dense, dense_name));
  KESTREL_RETURN_IF_ERROR(check_not_null(dense, dense_name));
  const Shape3 d = shape3(dense);
  if (d.batches != q.batches() || d.rows != q.rows() || d.cols != q.k())
    return Status::InvalidArgument(std::string(dense_name) + ": shape must be [L][rows][K] = [" +
                                   std::to_string(q.batches()) + "][" + std::to_string(q.rows()) +
                                   "][" + std::to_string(q.k()) + "] to match " + q_name +
                                   ", got " + dense.describe());
  KESTREL_RETURN_IF_ERROR(check_aligned(dense, 16, dense_name));
  KESTREL_RETURN_IF_ERROR(check_aligned(q.values, 8, (std::string(q_name) + ".values").c_str()));
  KESTREL_RETURN_IF_ERROR(check_at_most(d.batches, kMaxBatches, "L", "grid.y limit"));
  KESTREL_RETURN_IF_ERROR(
      check_at_most(d.rows * d.cols / 4, kMaxRowItems, "rows*K/4", "32-bit item index"));
  return Status::Ok();
}

// Blocked scale tensors have padding rows/k-blocks that no thread owns.
bool blocked_has_padding(int64_t rows, int64_t k) { return rows % 128 != 0 || (k / 16) % 4 != 0; }

}  // namespace

Status quantize_nvfp4(const TensorView& x, const Nvfp4View& out, cudaStream_t stream) {
  KESTREL_RETURN_IF_ERROR(check_codec_shapes(x, "x", out, "out"));
  if (!(out.global_scale > 0.0f) || out.global_scale > 3.0e38f)
    return Status::InvalidArgument("out.global_scale: must be positive and finite, got " +
                                   std::to_string(out.global_scale));
  const ops::Shape3 xs = ops::shape3(x), vs = ops::shape3(out.values);
  if (xs.rows == 0 || xs.batches == 0) return Status::Ok();
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  const bool blocked = out.layout == ScaleLayout::kBlocked;
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      {"nvfp4_quantize.cuh",
       std::string("kestrel::quantize_kernel<") + element_type(x.dtype) + ", " +
           std::to_string(xs.cols) + ", " + (blocked ? "true" : "false") + ">",
       {}},
      &kernel));
  if (blocked && blocked_has_padding(xs.rows, xs.cols))
    KESTREL_CUDA_RETURN(cudaMemsetAsync(out.scales.data, 0, size_t(out.scales.shape[0]), stream));
  rt::LaunchShape shape;
  if (x.dtype == DType::kF32) {
    shape = grid_for(xs.rows * xs.cols / 16, xs.batches, dev->sm_count);
  } else {
    // Each CTA builds a rounding table first: one resident wave, grid-striding.
    rt::LaunchShape probe;
    probe.block = dim3(256);
    int resident = 0;
    KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(probe, &resident));
    shape = segment_grid(xs.rows, xs.cols, xs.batches,
                         std::max<int64_t>(1, resident / xs.batches));
  }
  return kernel(shape, stream, static_cast<const void*>(x.data), strides_of(xs), out.values.data,
                strides_of(vs), out.scales.data, linear_scale_strides(out), int(xs.rows),
                out.global_scale, scale_guess_factor(out.global_scale));
}

Status dequantize_nvfp4(const Nvfp4View& in, const TensorView& y, cudaStream_t stream) {
  KESTREL_RETURN_IF_ERROR(check_codec_shapes(y, "y", in, "in"));
  if (!(in.global_scale == in.global_scale))
    return Status::InvalidArgument("in.global_scale: must not be NaN");
  const ops::Shape3 ys = ops::shape3(y), vs = ops::shape3(in.values);
  if (ys.rows == 0 || ys.batches == 0) return Status::Ok();
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      {"nvfp4_quantize.cuh",
       std::string("kestrel::dequantize_kernel<") + element_type(y.dtype) + ", " +
           std::to_string(ys.cols) + ", " +
           (in.layout == ScaleLayout::kBlocked ? "true" : "false") + ">",
       {}},
      &kernel));
  const auto shape = segment_grid(ys.rows, ys.cols, ys.batches,
                                  std::max<int64_t>(1, int64_t(dev->sm_count) * 16 / ys.batches));
  return kernel(shape, stream, static_cast<const void*>(in.values.data), strides_of(vs),
                static_cast<const void*>(in.scales.data), linear_scale_strides(in), y.data,
                strides_of(ys), int(ys.rows), in.global_scale);
}

Status convert_scale_layout(const TensorView& src, ScaleLayout src_layout, const TensorView& dst,
                            ScaleLayout dst_layout, int64_t rows, int64_t k, int64_t batches,
                            cudaStream_t stream) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(check_positive(batches, "batches"));
  KESTREL_RETURN_IF_ERROR(check_positive(rows, "rows"));
  KESTREL_RETURN_IF_ERROR(check_positive(k, "k"));
  KESTREL_RETURN_IF_ERROR(check_multiple(k, 16, "k"));
  KESTREL_RETURN_IF_ERROR(check_at_most(batches, kMaxBatches, "batches", "grid.y limit"));
  if (src_layout == dst_layout)
    return Status::InvalidArgument("dst_layout: must differ from src_layout (both " +
                                   std::string(scale_layout_name(src_layout)) + ")");
  // Reuse the NVFP4 view checks on each side; the values view is a stand-in
  // (never read) whose rank follows the linear side's.
  const TensorView& linear_view = src_layout == ScaleLayout::kLinear ? src : dst;
  Nvfp4View probe;
  probe.values = linear_view.rank == 2
                     ? TensorView::dense(nullptr, DType::kE2M1x2, {rows, k / 2})
                     : TensorView::dense(nullptr, DType::kE2M1x2, {batches, rows, k / 2});
  if (linear_view.rank == 2 && batches != 1)
    return Status::InvalidArgument("batches: must be 1 when the linear scales are rank 2");
  probe.values.data = reinterpret_cast<void*>(uintptr_t(16));  // passes the null check
  for (const auto& [view, layout, name] :
       {std::tuple{src, src_layout, "src"}, std::tuple{dst, dst_layout, "dst"}}) {
    probe.scales = view;
    probe.layout = layout;
    KESTREL_RETURN_IF_ERROR(validate_nvfp4(probe, name));
  }
  const bool to_blocked = dst_layout == ScaleLayout::kBlocked;
  const TensorView &linear = to_blocked ? src : dst, &blocked = to_blocked ? dst : src;
  const Shape3 ls = shape3(linear);
  // 16-byte accesses on both sides (the kernel's VEC) where both are aligned
  // for them.
  const bool vec = reinterpret_cast<uintptr_t>(blocked.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(linear.data) % 16 == 0 && ls.row_stride % 16 == 0 &&
                   ls.batch_stride % 16 == 0;
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"nvfp4_quantize.cuh",
                       std::string("kestrel::convert_scales_kernel<") +
                           (to_blocked ? "true" : "false") + ", " + (vec ? "true" : "false") + ">",
                       {}},
                      &kernel));
  // A CTA per tile of 128 rows x 32 scale blocks (every blocked byte, padding
  // too).
  const int64_t tiles = (rows + 127) / 128 * ((k / 16 + 31) / 32);
  const auto shape = grid_for(tiles * 256, batches, dev->sm_count);
  return kernel(shape, stream, static_cast<const void*>(src.data), dst.data, strides_of(ls),
                int(rows), int(k / 16));
}

}  // namespace kestrel
