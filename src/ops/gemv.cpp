// NVFP4 GEMV API: configurations, validation, and the choice between the
// wgmma kernel (src/ops/gemv_wgmma.cpp) and the register kernel
// (src/ops/gemv_register.cpp).
#include "kestrel/gemv.h"

#include <string>

#include "ops/gemv_launch.h"
#include "ops/validate.h"
#include "runtime/device.h"

namespace kestrel {
namespace {

constexpr int64_t kMaxK = 65536;

}  // namespace

namespace ops {

GemvOperandArgs gemv_operand_args(const GemvProblem& pr, float decode_factor) {
  GemvOperandArgs o{};
  o.sfa = pr.a.scales.data;
  if (pr.a.layout == ScaleLayout::kLinear) {
    const Shape3 s = shape3(pr.a.scales);
    o.sfa_batch = s.batch_stride;
    o.sfa_row = s.row_stride;
  }
  o.b = pr.b.values.data;
  o.b_batch = shape3(pr.b.values).batch_stride;
  o.sfb = pr.b.scales.data;
  if (pr.b.layout == ScaleLayout::kLinear) o.sfb_batch = shape3(pr.b.scales).batch_stride;
  o.c = pr.c.data;
  o.c_batch = pr.c.rank == 2 ? pr.c.stride[0] : 0;
  o.c_row = pr.c.stride[pr.c.rank - 1];
  o.m = int(pr.m);
  o.k = int(pr.k);
  o.l = int(pr.batches);
  o.b_rows = int(pr.b.rows());
  o.alpha = pr.a.global_scale * pr.b.global_scale * decode_factor;
  o.b_token = shape3(pr.b.values).row_stride;
  if (pr.b.layout == ScaleLayout::kLinear) o.sfb_token = shape3(pr.b.scales).row_stride;
  o.c_token = pr.c_token;
  return o;
}

Status launch_gemv_tokens(const GemvProblem& p, const rt::DeviceInfo& dev, cudaStream_t stream,
                          bool* ran) {
  *ran = false;
  // The register kernel at every size: with the integer tensor cores and the
  // ring it passed the wgmma kernel at two tokens too (H200, session 49, us,
  // register / wgmma: N28672 K4096 29.3 / 30.9, N8192 K8192 20.0 / 22.0).
  GemvConfig cfg = gemv_default_config(p.m, p.k, p.batches, dev.sm_count, GemvKernel::kRegister);
  // Each token's B is staged: the SM's 16 warps share up to 224 KB of it
  // (one token keeps 64 KB a CTA). Rows long enough for a cluster split (few
  // rows, K >= 32768) stay on the GEMM kernel: the kernel takes several tokens
  // without one only.
  const int64_t staged_cap = (int64_t(224) << 10) * cfg.warps / 16;
  // Three tokens take two groups in flight through the ring only, four tokens
  // one (gemv_register_tokens_depth): too few loads outstanding to stream
  // large weights, so from 32 Mi values four tokens (on rows of K < 8192:
  // longer ones run as a column tile), and three whose rows the ring cannot
  // copy, run the GEMM kernel (H200, us, register / GEMM
  // kernel: session 49, M3 ring d2: N8192 K8192 23.4 / 25.1, N28672 K4096
  // 33.1 / 38.4; M4 ring d2 N8192 K8192 27.1 / 24.9; session 47, M3 N1024
  // K4096 6.0 / 11.1, M4 N4096 K4096 13.1 / 13.3). Five to sixteen tokens
  // run as the mma's columns at two groups in flight, where they beat the
  // GEMM kernel (H200, session 49, us, register / GEMM kernel): M5..8 on rows
  // of K >= 8192 or below 48 Mi values (N8192 K8192 22.3 / 24.9, N4096 K4096
  // 11.7 / 13.2, N1024 K4096 5.3 / 10.9; N14336 K4096 23.7 / 22.9, N28672
  // K4096 39.4 / 38.2); two column tiles (M9..16) below 8 Mi only (N1024
  // K4096 6.8-9.9 / 11.1; N2048 K8192 14.7 / 13.6, N8192 K8192 32.3 / 25.0).
  const int64_t values = p.m * p.batches * p.k;
  const int64_t kernel_tokens = gemv_register_kernel_tokens(p.tokens, p.k);
  if (kernel_tokens > kGemvMaxStagedTokens &&
      (kernel_tokens > 8 ? values >= (int64_t(8) << 20)
                         : p.k < 8192 && values >= (int64_t(48) << 20)))
    return Status::Ok();
  cfg.ring = cfg.ring && gemv_register_ring_fits(p);
  cfg.depth = gemv_register_tokens_depth(cfg.depth, kernel_tokens, cfg.ring);
  const bool large = values >= (int64_t(32) << 20);
  if (cfg.cluster > 1 || gemv_register_smem_bytes(cfg, p.k, p.tokens) > staged_cap ||
      (p.tokens > 2 && large && cfg.depth < 2) ||
      !check_gemv_register_config(cfg, p.k, dev, p.tokens).ok())
    return Status::Ok();
  *ran = true;
  return launch_gemv_register(p, cfg, stream);
}

}  // namespace ops

std::string GemvConfig::describe() const {
  if (kernel == GemvKernel::kWgmma)
    return "wgmma s" + std::to_string(stages) + " x" + std::to_string(ctas_per_sm) +
           (chunks_per_item ? " i" + std::to_string(chunks_per_item) : "");
  return "rt" + std::to_string(row_tiles) + " w" + std::to_string(warps) + " c" +
         std::to_string(cluster) + " d" + std::to_string(depth) + (ring ? " ring" : "");
}

std::vector<GemvConfig> gemv_config_space() {
  std::vector<GemvConfig> out;
  for (int s : {2, 3, 4, 5})
    for (int x : {1, 2}) {
      if (x == 2 && s != 2) continue;  // two CTAs of more stages do not fit an SM
      for (int i : {0, 1, 2, 4, 8}) {
        GemvConfig c;
        c.stages = s;
        c.ctas_per_sm = x;
        c.chunks_per_item = i;
        out.push_back(c);
      }
    }
  for (int rt : {1, 2, 4, 8})
    for (int w : {4, 8, 16})
      for (int cl : {1, 2, 4, 8})
        for (int d : {1, 2, 4})
          for (bool ring : {false, true})
            if (w % rt == 0) {
              GemvConfig c;
              c.kernel = GemvKernel::kRegister;
              c.row_tiles = rt;
              c.warps = w;
              c.cluster = cl;
              c.depth = d;
              c.ring = ring;
              out.push_back(c);
            }
  return out;
}

GemvKernel gemv_default_kernel(int64_t, int64_t, int64_t) {
  // The register kernel on every shape measured since its loop moved to the
  // integer tensor cores with A through the ring (H200, session 49, us,
  // register / wgmma: M 7168 K 16384 26.7 / 29.3, M 28672 K 4096 24.4 / 28.5,
  // M 16384 K 8192 26.0 / 31.0, M 4096 K 7168 L 8 43.4 / 45.7, M 7168 K 2048
  // L 4 17.5 / 18.2). Before, the wgmma kernel led with many rows
  // (BENCHMARKS.md, sessions 13 to 18, H100).
  return GemvKernel::kRegister;
}

GemvConfig gemv_default_config(int64_t m, int64_t k, int64_t batches, int sm_count,
                               GemvKernel kernel) {
  GemvConfig c;
  c.kernel = kernel;
  if (kernel == GemvKernel::kWgmma) return c;  // items claimed at run time: no split to pick
  // Register kernel, from a grid search on an H100 (BENCHMARKS.md, session
  // 18): 16-row tiles; CTAs of 4 warps where the tiles cover the SMs twice,
  // of 8 where they cover them once, and below that 16 warps splitting K
  // inside the CTA. A cluster split costs more than it gains unless rows are
  // long (about 1.2 us more at M 1024 K 4096; at M 1024 K 16384 two CTAs per
  // row tile gain 5%, four lose 50%): split only while a CTA keeps at least
  // 16384 values of each row. Larger clusters also where the staged B would
  // pass 64 KB.
  c.row_tiles = 1;
  const int64_t items = (m + 15) / 16 * batches;
  if (items >= 2 * int64_t(sm_count)) {
    c.warps = 4;
  } else if (items >= sm_count) {
    c.warps = 8;
  } else {
    c.warps = 16;
    while (c.cluster < 8 && items * c.cluster < sm_count && k / c.cluster >= 16384)
      c.cluster *= 2;
  }
  while (c.cluster < 8 && ops::gemv_register_smem_bytes(c, k) > 64 * 1024) c.cluster *= 2;
  // A through the cp.async ring from 32 Mi values, and with a cluster split
  // (H200, us, ring / registers: session 48, M 8192 K 8192 17.9-18.1 /
  // 19.0-19.2, below 32 Mi M 4096 K 4096 6.3-6.6 / 6.2-6.5; session 49,
  // M 1024 K 16384 c2 7.1 / 10.2, M 512 K 32768 c4 13.6 / 14.5). Four groups
  // in flight pay on long rows only (session 49, d4 / d2: M 8192 K 8192
  // 16.1 / 16.7, M 4096 K 14336 14.9 / 16.0, M 16384 K 8192 26.0 / 29.3;
  // M 14336 K 4096 16.4 / 15.7, M 4096 K 7168 L 8 44.1 / 43.4), not with a
  // cluster (M 1024 K 16384 c2 10.8 / 7.1).
  c.ring = m * batches * k >= (int64_t(32) << 20) || c.cluster > 1;
  if (c.ring && c.cluster == 1 && k >= 8192) c.depth = 4;
  return c;
}

Status gemv_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                  cudaStream_t stream, const GemvConfig* config) {
  using namespace ops;
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(a, "a"));
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(b, "b"));
  const int64_t batches = a.batches(), m = a.rows(), k = a.k();
  if (b.batches() != batches)
    return Status::InvalidArgument("b: batch count must equal a's (" + std::to_string(batches) +
                                   "), got " + std::to_string(b.batches()));
  if (b.k() != k)
    return Status::InvalidArgument("b: K must equal a's K (" + std::to_string(k) + "), got " +
                                   std::to_string(b.k()));
  KESTREL_RETURN_IF_ERROR(check_positive(b.rows(), "b rows"));
  KESTREL_RETURN_IF_ERROR(check_positive(k, "K"));
  KESTREL_RETURN_IF_ERROR(check_at_most(k, kMaxK, "K", "B is staged in shared memory"));
  KESTREL_RETURN_IF_ERROR(check_at_most(batches, 65535, "L", "grid.y limit"));
  KESTREL_RETURN_IF_ERROR(check_at_most(m, int64_t(1) << 30, "M", "32-bit row index"));
  KESTREL_RETURN_IF_ERROR(check_dtype(c, {DType::kF16, DType::kBF16}, "c"));
  KESTREL_RETURN_IF_ERROR(check_rank(c, 1, 2, "c"));
  KESTREL_RETURN_IF_ERROR(check_not_null(c, "c"));
  if (c.rank == 1 ? (batches != 1 || c.shape[0] != m) : (c.shape[0] != batches || c.shape[1] != m))
    return Status::InvalidArgument("c: shape must be [L][M] = [" + std::to_string(batches) + "][" +
                                   std::to_string(m) + "], got " + c.describe());
  KESTREL_RETURN_IF_ERROR(check_aligned(a.values, 8, "a.values"));
  KESTREL_RETURN_IF_ERROR(check_aligned(b.values, 4, "b.values"));
  for (float s : {a.global_scale, b.global_scale})
    if (!(s == s)) return Status::InvalidArgument("global_scale: must not be NaN");

  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (!dev->is_hopper() && dev->cc_major < 9)
    return Status::Unsupported("gemv_nvfp4 needs sm_89+ (e4m3 conversion), this GPU is " +
                               dev->arch());
  const GemvProblem p{a, b, c, batches, m, k};
  GemvConfig cfg = config ? *config
                          : gemv_default_config(m, k, batches, dev->sm_count,
                                                gemv_default_kernel(m, k, batches));
  if (cfg.kernel == GemvKernel::kWgmma) {
    const std::string rule = gemv_wgmma_unmet_rule(p, cfg, *dev);
    if (rule.empty()) return m == 0 ? Status::Ok() : launch_gemv_wgmma(p, cfg, stream);
    if (config) return Status::InvalidArgument(rule + " (config " + cfg.describe() + ")");
    cfg = gemv_default_config(m, k, batches, dev->sm_count, GemvKernel::kRegister);
  }
  KESTREL_RETURN_IF_ERROR(check_gemv_register_config(cfg, k, *dev));
  if (m == 0) return Status::Ok();
  return launch_gemv_register(p, cfg, stream, /*fit_cluster=*/config == nullptr);
}

}  // namespace kestrel
