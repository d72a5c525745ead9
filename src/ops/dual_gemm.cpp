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
  // Two consumer warpgroups: the plain GEMM's heuristic on twice the rows
  // (half the output columns per CTA: the same tile counts).
  const GemmConfig c = gemm_default_config(m, 2 * n, k, batches, sm_count);
  if (c.split_k != 1) return c;
  // Without a K split, tiles of 96 columns (three consumer warpgroups) where
  // their waves of work are a twentieth shorter: the longest CTA's tiles x
  // columns x tokens, a stage of up to 128 tokens costing 7% more per value
  // than one of 256 (H100, session 38: 0.62 us at 64 x 128, 1.166 at 64 x
  // 256; H200, session 39: 0.936 at 96 x 128), the K tail not counted (its
  // end costs ~5 us). Not under 96 tokens: their stage decodes too often
  // for its wgmmas (dual M256 N3072 K4096 at bn64: 32.0 us against 28.0 at
  // two warpgroups' bn128). Measured on the H200 (session 39), packed: dual
  // M512 N3072 K7168 65.4 -> 61.4 us (bn256 with a K tail -> bn128), M384
  // N3072 K7168 65.3 -> 53.5, M1024 N3072 K4096 86.5 -> 70.4, M512 N6144
  // K4096 85.8 -> 71.1.
  auto waves_cost = [&](const GemmConfig& cfg) {
    const int64_t tiles = ops::gemm_tiles(m, n, batches, cfg, true);
    return ops::ceil_div(tiles, sm_count) * ops::gemm_tile_columns(cfg, true) * cfg.block_n *
           (cfg.block_n > 128 ? 100 : 107);
  };
  auto three_groups = [](int bn) {
    GemmConfig t{bn, ops::gemm_default_stages(bn, false, false, 3), 1};
    t.consumer_groups = 3;
    return t;
  };
  const GemmConfig c96 = three_groups(96), c128 = three_groups(128);
  const GemmConfig& c3 = waves_cost(c96) < waves_cost(c128) ? c96 : c128;
  return waves_cost(c3) * 20 < waves_cost(c) * 19 ? c3 : c;
}

namespace {

Status run_dual_gemm(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2, bool w_packed,
                     const TensorView& c, cudaStream_t stream, const GemmConfig* config) {
  ops::GemmShape shape, shape2;
  KESTREL_RETURN_IF_ERROR(ops::validate_gemm(a, b1, c, "c", &shape));
  KESTREL_RETURN_IF_ERROR(ops::validate_gemm(a, b2, c, "c", &shape2));
  KESTREL_RETURN_IF_ERROR(ops::check_second_weight(b1, b2));
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
