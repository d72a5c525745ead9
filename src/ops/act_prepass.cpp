#include "ops/act_prepass.h"

#include <cstdint>
#include <string>

#include "ops/nvfp4_kernel_specs.h"
#include "ops/nvfp4_operand.h"
#include "ops/validate.h"
#include "runtime/launcher.h"

namespace kestrel::ops {
namespace {

struct ActPrepassParams {  // mirrors kernels/nvfp4_act_prepass.cuh
  Nvfp4Operand x;
  void* out;
  int m, k, kp;
  int rows_out;
};

}  // namespace

Status run_act_prepass(const Nvfp4View& a, int64_t rows_out, cudaStream_t stream,
                       rt::StreamScratch* out, bool lane_major) {
  const int64_t batches = a.batches(), m = a.rows(), k = a.k(), kp = prepass_kp(k);
  if (rows_out < m) return Status::Internal("act pre-pass: rows_out below the rows of A");
  KESTREL_RETURN_IF_ERROR(out->allocate(size_t(batches * rows_out * kp * 2), stream));
  ActPrepassParams p{};
  p.x = nvfp4_operand(a);
  p.out = out->get();
  p.m = int(m);
  p.k = int(k);
  p.kp = int(kp);
  p.rows_out = int(rows_out);
  // 16-byte loads where every row start is 16-byte aligned.
  const bool vec16 = reinterpret_cast<uintptr_t>(a.values.data) % 16 == 0 &&
                     (batches == 1 || p.x.values_batch % 16 == 0) &&
                     (m == 1 || p.x.values_row % 16 == 0);
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      act_prepass_kernel_spec(a.layout == ScaleLayout::kBlocked, vec16, lane_major), &kernel));
  rt::LaunchShape shape;
  // One warp per kPrepassBlocksPerWarp blocks of kPrepassBlockK values.
  const int64_t blocks = rows_out * (kp / kPrepassBlockK);
  shape.block = dim3(kPrepassWarps * 32);
  const int64_t per_cta = kPrepassWarps * kPrepassBlocksPerWarp;
  shape.grid = dim3(unsigned((blocks + per_cta - 1) / per_cta), unsigned(batches));
  return kernel(shape, stream, p);
}

}  // namespace kestrel::ops
