// Host side of the register GEMV (kernels/nvfp4_gemv.cuh): the default GEMV
// kernel (any 8-byte aligned rows, any K % 16), and the GEMM's at 2..16 tokens.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ops/act_prepass.h"
#include "ops/gemv_launch.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/validate.h"
#include "runtime/launcher.h"

namespace kestrel::ops {
namespace {

struct GemvParams {  // mirrors kestrel::GemvParams in kernels/nvfp4_gemv.cuh
  const void* a;
  long long a_batch, a_row;
  GemvOperandArgs o;
  const void* bw;
  long long bw_batch;
  int bw_row;
  int tokens;
};

constexpr int kGroup = 128, kGroupSmem = 128 + 8 * 4, kRingSlotBytes = 1024;

}  // namespace

int gemv_register_smem_bytes(const GemvConfig& c, int64_t k, int64_t tokens_in) {
  // As a column tile (gemv_register_kernel_tokens) B is read from the
  // pre-pass's output, not staged.
  const int64_t tokens = gemv_register_kernel_tokens(tokens_in, k);
  const int64_t staged_tokens = tokens > kGemvMaxStagedTokens ? 0 : tokens;
  const int64_t groups = (k + kGroup - 1) / kGroup;
  const int64_t per_cta = (groups + c.cluster - 1) / c.cluster;
  // Reduction buffers first (rounded to 16 bytes), the warps' rings of A, then
  // the staged B per token: the layout of kernels/nvfp4_gemv.cuh.
  const int64_t reduction =
      ((c.warps / c.row_tiles + c.cluster) * 16 * c.row_tiles * 4 * tokens + 15) / 16 * 16;
  const int64_t ring = c.ring ? int64_t(c.warps) * c.depth * kRingSlotBytes : 0;
  return int(per_cta * kGroupSmem * staged_tokens + reduction + ring);
}

Status check_gemv_register_config(const GemvConfig& c, int64_t k, const rt::DeviceInfo& dev,
                                  int64_t tokens) {
  auto in = [](int v, std::initializer_list<int> set) {
    return std::find(set.begin(), set.end(), v) != set.end();
  };
  if (!in(c.row_tiles, {1, 2, 4, 8}) || !in(c.warps, {4, 8, 16}) || c.warps % c.row_tiles != 0 ||
      !in(c.cluster, {1, 2, 4, 8}) || !in(c.depth, {1, 2, 4}))
    return Status::InvalidArgument("config: not in gemv_config_space(): " + c.describe());
  const int smem = gemv_register_smem_bytes(c, k, tokens);
  if (smem > dev.max_smem_per_block_optin)
    return Status::InvalidArgument("config: needs " + std::to_string(smem) +
                                   " bytes of shared memory, the GPU allows " +
                                   std::to_string(dev.max_smem_per_block_optin) +
                                   "; use a larger cluster");
  return Status::Ok();
}

bool gemv_register_ring_fits(const GemvProblem& p) {
  return check_aligned(p.a.values, 16, "a.values").ok();
}

int gemv_pick_cluster(int64_t work, int64_t groups,
                      const std::vector<std::pair<int, int>>& resident_by_cluster) {
  int best = 0;
  int64_t best_cost = 0;
  for (const auto& [cluster, resident] : resident_by_cluster) {
    if (resident < 1) continue;
    const int64_t cost = (work + resident - 1) / resident * ((groups + cluster - 1) / cluster);
    if (best == 0 || cost < best_cost || (cost == best_cost && cluster < best)) {
      best = cluster;
      best_cost = cost;
    }
  }
  return best;
}

Status launch_gemv_register(const GemvProblem& pr, const GemvConfig& config, cudaStream_t stream,
                            bool fit_cluster) {
  const Nvfp4View &a = pr.a, &b = pr.b;
  const TensorView& c = pr.c;
  const Shape3 av = shape3(a.values);
  const bool vec16 = gemv_register_ring_fits(pr);
  GemvConfig cfg = config;
  cfg.ring = cfg.ring && vec16;
  const bool a_blk = a.layout == ScaleLayout::kBlocked, b_blk = b.layout == ScaleLayout::kBlocked;
  // Each lane reads the scales of two adjacent blocks with one 2-byte load
  // when they are 2-byte aligned (always in the blocked layout).
  const bool scale_pair =
      a_blk || (reinterpret_cast<uintptr_t>(a.scales.data) % 2 == 0 &&
                shape3(a.scales).row_stride % 2 == 0 && shape3(a.scales).batch_stride % 2 == 0);
  GemvParams p{};
  p.a = a.values.data;
  p.a_batch = av.batch_stride;
  p.a_row = av.row_stride;
  const int tokens = int(gemv_register_kernel_tokens(pr.tokens, pr.k));
  const bool wide = tokens > kGemvMaxStagedTokens;
  // Both operands decode to twice their e2m1 values; WIDE: to e2m1 * scale / 2^14.
  p.o = gemv_operand_args(pr, wide ? kDecodeUnitSquared : 0.25f);
  p.tokens = int(pr.tokens);
  rt::StreamScratch bw;
  if (wide) {  // the pre-pass's rows past the tokens are zero
    KESTREL_RETURN_IF_ERROR(run_act_prepass(b, tokens, stream, &bw, true));
    p.bw = bw.get();
    p.bw_row = int(prepass_kp(pr.k));
    p.bw_batch = (long long)tokens * p.bw_row;
  }

  // Persistent grid: as many clusters as fit at once, none idle.
  const int64_t work = (pr.m + 16 * cfg.row_tiles - 1) / (16 * cfg.row_tiles) * pr.batches;
  auto shape_of = [&](const GemvConfig& g) {
    rt::LaunchShape s;
    s.block = dim3(unsigned(g.warps * 32));
    s.cluster = dim3(unsigned(g.cluster), 1, 1);
    s.smem_bytes = size_t(gemv_register_smem_bytes(g, pr.k, pr.tokens));
    s.overlap_previous = wide;  // A streams while the pre-pass finishes
    s.grid = dim3(unsigned(g.cluster));
    return s;
  };
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      gemv_kernel_spec(c.dtype, cfg, a_blk, b_blk, vec16, scale_pair, tokens), &kernel));
  int resident = 0;
  KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape_of(cfg), &resident));
  if (fit_cluster && cfg.cluster > 1) {
    // Clusters of each smaller split that fit at once, from this kernel's
    // resources (the split changes its code, not its registers or block).
    const rt::DeviceInfo* dev = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
    std::vector<std::pair<int, int>> options{{cfg.cluster, resident}};
    for (int cl = cfg.cluster / 2; cl >= 1; cl /= 2) {
      GemvConfig g = cfg;
      g.cluster = cl;
      if (!check_gemv_register_config(g, pr.k, *dev, pr.tokens).ok()) continue;
      int r = 0;
      KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape_of(g), &r));
      options.push_back({cl, r});
    }
    const int pick = gemv_pick_cluster(work, (pr.k + kGroup - 1) / kGroup, options);
    if (pick > 0 && pick != cfg.cluster) {
      cfg.cluster = pick;
      KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
          gemv_kernel_spec(c.dtype, cfg, a_blk, b_blk, vec16, scale_pair, tokens), &kernel));
      KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape_of(cfg), &resident));
    }
  }
  if (resident < 1)
    return Status::InvalidArgument("config: " + cfg.describe() + " cannot run on this GPU");
  rt::LaunchShape shape = shape_of(cfg);
  shape.grid = dim3(unsigned(std::min<int64_t>(work, resident) * cfg.cluster));
  return kernel(shape, stream, p);
}

}  // namespace kestrel::ops
