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
#include "runtime/scratch.h"

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
  void* b_slots;
  float* partials;
  unsigned* tile_counts;
  int groups, tiles;
  long long units;
  long long grid_warps;
};

constexpr int kGroup = 128;
constexpr int64_t kMaxK = int64_t(1) << 20;

// kernels/nvfp4_gemv.cuh (smem_bytes): a zero block, then per warp `depth`
// stages of 16 padded rows of A, decoded B and scale codes.
int smem_bytes(const GemvConfig& c) { return 32 + c.warps * c.depth * (c.run * 1408 + 1024); }

constexpr int kSmemLimit = 227 * 1024;  // opt-in shared memory per block on sm_90

Status check_config(const GemvConfig& c) {
  auto in = [](int v, std::initializer_list<int> set) {
    return std::find(set.begin(), set.end(), v) != set.end();
  };
  if (!in(c.warps, {4, 8}) || !in(c.depth, {2, 3, 4}) || !in(c.run, {4, 8}) ||
      !in(c.min_groups, {8, 16, 32, 64}) || smem_bytes(c) > kSmemLimit)
    return Status::InvalidArgument("config: not in gemv_config_space(): " + c.describe());
  return Status::Ok();
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

std::string GemvConfig::describe() const {
  return "w" + std::to_string(warps) + " d" + std::to_string(depth) + " r" + std::to_string(run) +
         " g" + std::to_string(min_groups);
}

std::vector<GemvConfig> gemv_config_space() {
  std::vector<GemvConfig> out;
  for (int w : {4, 8})
    for (int d : {2, 3, 4})
      for (int r : {4, 8})
        for (int g : {8, 16, 32, 64}) {
          const GemvConfig c{w, d, r, g};
          if (smem_bytes(c) <= kSmemLimit) out.push_back(c);
        }
  return out;
}

GemvConfig gemv_default_config(int64_t, int64_t, int64_t, int) { return GemvConfig{}; }

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
  KESTREL_RETURN_IF_ERROR(check_at_most(k, kMaxK, "K", "32-bit offsets within a row"));
  KESTREL_RETURN_IF_ERROR(check_at_most(batches, int64_t(1) << 30, "L", "32-bit batch index"));
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
  if (m == 0 || batches == 0) return Status::Ok();

  const Shape3 av = shape3(a.values), bv = shape3(b.values);
  const bool vec16 = check_aligned(a.values, 16, "a.values").ok();
  const bool a_blk = a.layout == ScaleLayout::kBlocked, b_blk = b.layout == ScaleLayout::kBlocked;
  // Scale codes are copied 4 at a time when every row's are 4-byte aligned
  // (always in the blocked layout).
  const bool scale4 =
      a_blk || (reinterpret_cast<uintptr_t>(a.scales.data) % 4 == 0 &&
                shape3(a.scales).row_stride % 4 == 0 && shape3(a.scales).batch_stride % 4 == 0);
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
  p.groups = int((k + kGroup - 1) / kGroup);
  p.tiles = int((m + 15) / 16);
  p.units = int64_t(p.tiles) * p.groups * batches;

  rt::Kernel main_kernel, prepass;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(
      ops::gemv_kernel_spec(c.dtype, cfg, a_blk, vec16, scale4), &main_kernel));
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(ops::gemv_prepass_spec(b_blk), &prepass));
  // As many CTAs as fit at once (every warp streams the same share), fewer
  // when a warp would get less than min_groups groups.
  rt::LaunchShape shape;
  shape.block = dim3(unsigned(cfg.warps * 32));
  shape.smem_bytes = size_t(smem_bytes(cfg));
  shape.early_start = true;
  int resident = 0;
  KESTREL_RETURN_IF_ERROR(main_kernel.max_active_clusters(shape, &resident));
  if (resident < 1)
    return Status::InvalidArgument("config: " + cfg.describe() + " cannot run on this GPU");
  const int64_t wanted = (p.units + int64_t(cfg.min_groups) * cfg.warps - 1) /
                         (int64_t(cfg.min_groups) * cfg.warps);
  shape.grid = dim3(unsigned(std::max<int64_t>(1, std::min<int64_t>(wanted, resident))));
  p.grid_warps = int64_t(shape.grid.x) * cfg.warps;

  // Workspace: the zero slot and decoded B, the partial sums, the tile counters.
  const size_t b_bytes = align256(32 + size_t(batches) * p.groups * 256);
  const size_t partial_bytes = align256(size_t(p.grid_warps) * 2 * 16 * sizeof(float));
  const size_t count_bytes = size_t(batches) * p.tiles * sizeof(unsigned);
  rt::StreamScratch scratch;
  KESTREL_RETURN_IF_ERROR(scratch.allocate(b_bytes + partial_bytes + count_bytes, stream));
  char* ws = static_cast<char*>(scratch.get());
  p.b_slots = ws;
  p.partials = reinterpret_cast<float*>(ws + b_bytes);
  p.tile_counts = reinterpret_cast<unsigned*>(ws + b_bytes + partial_bytes);

  rt::LaunchShape pre;
  pre.block = dim3(256);
  const int64_t slots = int64_t(batches) * p.groups * 8;
  pre.grid = dim3(unsigned(std::min<int64_t>((slots + 255) / 256, 4 * int64_t(dev->sm_count))));
  KESTREL_RETURN_IF_ERROR(prepass(pre, stream, p));
  return main_kernel(shape, stream, p);
}

}  // namespace kestrel
