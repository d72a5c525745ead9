// Host side of the NVFP4 dual GEMM (SwiGLU): validate both weights against
// the same activations, then the shared GEMM launch with the second weight.
#include <algorithm>
#include <string>

#include "kestrel/gemm.h"
#include "ops/gemm_common.h"
#include "ops/weight_pack.h"
#include "runtime/device.h"

namespace kestrel {

GemmConfig dual_gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches,
                                    int sm_count) {
  // Half the output columns per CTA of the plain GEMM: the same heuristic on
  // twice the rows gives the same tile counts.
  const GemmConfig c = gemm_default_config(m, 2 * n, k, batches, sm_count);
  if (c.split_k == 1 || c.block_n <= 128) return c;
  // A second tile of 128 tokens beats a K split of 256-token tiles (H100,
  // session 13, splits added by reduce-scatter as in the plain GEMM): M256
  // N3072 K4096 bn128 k1 30.0 us, bn256 k2 33.2; M256 N4096 K7168 46.4 vs
  // 48.7.
  return gemm_default_config(128, 2 * n, k, batches * ops::ceil_div(m, 128), sm_count);
}

namespace {

Status run_dual_gemm(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2, bool w_packed,
                     const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  ops::GemmShape shape, shape2;
  KESTREL_RETURN_IF_ERROR(ops::validate_gemm(a, b1, c, "c", &shape));
  KESTREL_RETURN_IF_ERROR(ops::validate_gemm(a, b2, c, "c", &shape2));
  if (b2.rows() != b1.rows())
    return Status::InvalidArgument("b2: N must equal b1's (" + std::to_string(b1.rows()) +
                                   "), got " + std::to_string(b2.rows()));
  if (b2.layout != b1.layout)
    return Status::InvalidArgument(std::string("b2: scale layout must equal b1's (") +
                                   scale_layout_name(b1.layout) + ")");
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (!dev->is_hopper())
    return Status::Unsupported("dual_gemm_nvfp4 needs an sm_90 GPU (wgmma), this GPU is " +
                               dev->arch());
  if (shape.m == 0 || shape.n == 0 || shape.batches == 0) return Status::Ok();
  GemmConfig cfg;
  KESTREL_RETURN_IF_ERROR(ops::resolve_gemm_config(
      config, dual_gemm_default_config(shape.m, shape.n, shape.k, shape.batches, dev->sm_count),
      shape, c.dtype, b1.layout == ScaleLayout::kBlocked, true, w_packed, &cfg));
  return ops::launch_nvfp4_gemm(a, b1, &b2, w_packed, c, shape, cfg, stream);
}

}  // namespace

Status dual_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2,
                       const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  return run_dual_gemm(a, b1, b2, false, c, stream, config);
}

Status dual_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b1, const GemmPackedWeights& b2,
                       const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  return run_dual_gemm(a, ops::packed_weight_view(b1), ops::packed_weight_view(b2), true, c, stream,
                       config);
}

}  // namespace kestrel
