// Host side of the NVFP4 GEMV: validate, choose a configuration, launch
// kernels/nvfp4_gemv.cuh.
#include "kestrel/gemv.h"

#include <algorithm>
#include <string>

#include "ops/nvfp4_kernel_specs.h"
#include "ops/validate.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel {
namespace {

struct GemvParams {  // mirrors kestrel::GemvParams in kernels/nvfp4_gemv.cuh
  const void* a;
  long long a_batch, a_row;
  const void* sfa;
  long long sfa_batch, sfa_row;
  const void* b;
  long long b_batch;
  const void* sfb;
  long long sfb_batch;
  void* c;
  long long c_batch, c_row;
  int m, k, l, b_rows;
  float alpha;
};

constexpr int kGroup = 128, kGroupSmem = 256;
constexpr int64_t kMaxK = 65536;

Status check_config(const GemvConfig& c) {
  auto in = [](int v, std::initializer_list<int> set) {
    return std::find(set.begin(), set.end(), v) != set.end();
  };
  if (!in(c.row_tiles, {1, 2, 4, 8}) || !in(c.warps, {4, 8, 16}) || c.warps % c.row_tiles != 0 ||
      !in(c.cluster, {1, 2, 4, 8}) || !in(c.depth, {1, 2, 4}))
    return Status::InvalidArgument("config: not in gemv_config_space(): " + c.describe());
  return Status::Ok();
}

int smem_bytes(const GemvConfig& c, int64_t k) {
  const int64_t groups = (k + kGroup - 1) / kGroup;
  const int64_t per_cta = (groups + c.cluster - 1) / c.cluster;
  // Reduction buffers first (rounded to 16 bytes), then the staged B: the
  // layout of kernels/nvfp4_gemv.cuh (reduction_bytes).
  const int reduction = ((c.warps / c.row_tiles + c.cluster) * 16 * c.row_tiles * 4 + 15) / 16 * 16;
  return int(per_cta * kGroupSmem + reduction);
}

}  // namespace

std::string GemvConfig::describe() const {
  return "rt" + std::to_string(row_tiles) + " w" + std::to_string(warps) + " c" +
         std::to_string(cluster) + " d" + std::to_string(depth);
}

std::vector<GemvConfig> gemv_config_space() {
  std::vector<GemvConfig> out;
  for (int rt : {1, 2, 4, 8})
    for (int w : {4, 8, 16})
      for (int c : {1, 2, 4, 8})
        for (int d : {1, 2, 4})
          if (w % rt == 0) out.push_back({rt, w, c, d});
  return out;
}

GemvConfig gemv_default_config(int64_t m, int64_t k, int64_t batches, int sm_count) {
  // Measured on an H100 (BENCHMARKS.md): 32-row tiles without a K split are
  // the best on every seed shape; split K over a cluster only while the work
  // items alone cannot cover the SMs, keeping at least 8 groups of 128 values
  // per CTA, and when the staged B would be too large to keep 3 CTAs per SM.
  GemvConfig c;
  const int64_t items = (m + 16 * c.row_tiles - 1) / (16 * c.row_tiles) * batches;
  while (c.cluster < 8 && items * c.cluster < sm_count && k / (kGroup * c.cluster * 2) >= 8)
    c.cluster *= 2;
  while (c.cluster < 8 && smem_bytes(c, k) > 64 * 1024) c.cluster *= 2;
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
  const GemvConfig cfg = config ? *config : gemv_default_config(m, k, batches, dev->sm_count);
  KESTREL_RETURN_IF_ERROR(check_config(cfg));
  const int smem = smem_bytes(cfg, k);
  if (smem > dev->max_smem_per_block_optin)
    return Status::InvalidArgument("config: needs " + std::to_string(smem) +
                                   " bytes of shared memory, the GPU allows " +
                                   std::to_string(dev->max_smem_per_block_optin) +
                                   "; use a larger cluster");
  if (m == 0 || batches == 0) return Status::Ok();

  const Shape3 av = shape3(a.values), bv = shape3(b.values);
  const bool vec16 = check_aligned(a.values, 16, "a.values").ok();
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
  p.sfa = a.scales.data;
  if (!a_blk) {
    const Shape3 s = shape3(a.scales);
    p.sfa_batch = s.batch_stride;
    p.sfa_row = s.row_stride;
  }
  p.b = b.values.data;
  p.b_batch = bv.batch_stride;
  p.sfb = b.scales.data;
  if (!b_blk) p.sfb_batch = shape3(b.scales).batch_stride;
  p.c = c.data;
  p.c_batch = c.rank == 2 ? c.stride[0] : 0;
  p.c_row = c.stride[c.rank - 1];
  p.m = int(m);
  p.k = int(k);
  p.l = int(batches);
  p.b_rows = int(b.rows());
  p.alpha = a.global_scale * b.global_scale * 268435456.0f;  // 2^28: two decodes of 2^-14

  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      ops::gemv_kernel_spec(c.dtype, cfg, a_blk, b_blk, vec16, scale_pair), &kernel));
  // Persistent grid: as many clusters as fit at once, none idle.
  rt::LaunchShape shape;
  const int64_t work = (m + 16 * cfg.row_tiles - 1) / (16 * cfg.row_tiles) * batches;
  shape.block = dim3(unsigned(cfg.warps * 32));
  shape.cluster = dim3(unsigned(cfg.cluster), 1, 1);
  shape.smem_bytes = size_t(smem);
  shape.grid = dim3(unsigned(cfg.cluster));
  int resident = 0;
  KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape, &resident));
  if (resident < 1)
    return Status::InvalidArgument("config: " + cfg.describe() + " cannot run on this GPU");
  shape.grid = dim3(unsigned(std::min<int64_t>(work, resident) * cfg.cluster));
  return kernel(shape, stream, p);
}

}  // namespace kestrel
