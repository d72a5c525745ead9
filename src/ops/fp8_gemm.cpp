// Host side of the FP8 GEMM with a fused add: validate, choose a
// configuration, build the TMA maps, launch kernels/fp8_gemm.cuh.
#include "kestrel/fp8_gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "ops/fp8_gemm_kernel.h"
#include "ops/gemm_common.h"
#include "ops/tma_views.h"
#include "ops/validate.h"
#include "runtime/device.h"
#include "runtime/launcher.h"
#include "runtime/scratch.h"
#include "runtime/tma.h"

namespace kestrel {
namespace {

struct Fp8GemmParams {  // mirrors kestrel::Fp8GemmParams in kernels/fp8_gemm.cuh
  int m, n, k;
  int batches;
  float alpha;
  int raster_rows;
  int a_tail_rows;
  int tail_begin;
  int tail_parts;
  float* partial;
  unsigned* arrivals;
  const float* scale_a;
  const float* scale_b;
};

// kernels/fp8_gemm.cuh: the K of a stage, the tile widths it compiles for;
// a tile has 64 rows per consumer warpgroup, and a producer warpgroup.
constexpr int kBK = 128;
const int kBlockNs[] = {64, 128, 192};
const int kConsumerGroups[] = {2, 1};
const int kTailSplits[] = {1, 2, 4, 8};

struct Fp8Shape {
  int64_t batches, m, n, k;
};

int block_m(const Fp8GemmConfig& c) { return 64 * c.consumer_groups; }

int64_t tiles_of(const Fp8Shape& s, int block_m, int block_n) {
  return ops::ceil_div(s.m, block_m) * ops::ceil_div(s.n, block_n) * s.batches;
}

Status check_operand(const TensorView& t, DType dtype, const char* name) {
  KESTREL_RETURN_IF_ERROR(ops::check_dtype(t, {dtype}, name));
  KESTREL_RETURN_IF_ERROR(ops::check_rank(t, 2, 3, name));
  KESTREL_RETURN_IF_ERROR(ops::check_not_null(t, name));
  KESTREL_RETURN_IF_ERROR(ops::check_row_major(t, name));
  // TMA: a 16-byte aligned base and row (and batch) strides.
  return ops::check_aligned(t, 16, name);
}

// The bytes [first, last] of a [L][rows][cols] view.
std::pair<uintptr_t, uintptr_t> byte_span(const TensorView& t) {
  const ops::Shape3 s = ops::shape3(t);
  const int es = dtype_size(t.dtype);
  const auto first = reinterpret_cast<uintptr_t>(t.data);
  return {first,
          first +
              uintptr_t(((s.batches - 1) * s.batch_stride + (s.rows - 1) * s.row_stride + s.cols) *
                        es) -
              1};
}

bool overlaps(const TensorView& x, const TensorView& y) {
  if (x.numel() == 0 || y.numel() == 0) return false;
  const auto [x0, x1] = byte_span(x);
  const auto [y0, y1] = byte_span(y);
  return x0 <= y1 && y0 <= x1;
}

Status validate(const TensorView& a, const TensorView& b, const TensorView* r, const TensorView& d,
                Fp8Shape* s) {
  KESTREL_RETURN_IF_ERROR(check_operand(a, DType::kE4M3, "a"));
  KESTREL_RETURN_IF_ERROR(check_operand(b, DType::kE4M3, "b"));
  KESTREL_RETURN_IF_ERROR(check_operand(d, DType::kBF16, "d"));
  const ops::Shape3 sa = ops::shape3(a), sb = ops::shape3(b), sd = ops::shape3(d);
  if (sb.cols != sa.cols)
    return Status::InvalidArgument("b: K (last dim) must equal a's, got " + b.describe() + " vs " +
                                   a.describe());
  if (sb.batches != sa.batches || sd.batches != sa.batches)
    return Status::InvalidArgument("b, d: batch count L must equal a's: a " + a.describe() +
                                   ", b " + b.describe() + ", d " + d.describe());
  if (sd.rows != sa.rows || sd.cols != sb.rows)
    return Status::InvalidArgument("d: shape must be [L][M][N] = [" + std::to_string(sa.batches) +
                                   "][" + std::to_string(sa.rows) + "][" + std::to_string(sb.rows) +
                                   "], got " + d.describe());
  if (r) {
    KESTREL_RETURN_IF_ERROR(check_operand(*r, DType::kBF16, "r"));
    const ops::Shape3 sr = ops::shape3(*r);
    if (sr.batches != sd.batches || sr.rows != sd.rows || sr.cols != sd.cols)
      return Status::InvalidArgument("r: shape must equal d's, got " + r->describe() + " vs " +
                                     d.describe());
    // A tile's R lands before its D leaves, so r may be d itself; other
    // overlaps would read another tile's D.
    const bool same = r->data == d.data && sr.row_stride == sd.row_stride &&
                      (sr.batches == 1 || sr.batch_stride == sd.batch_stride);
    if (!same && overlaps(*r, d))
      return Status::InvalidArgument("r: must be d itself or not overlap it, got " + r->describe() +
                                     " and d " + d.describe());
  }
  if (sa.rows > 0 && sb.rows > 0) KESTREL_RETURN_IF_ERROR(ops::check_positive(sa.cols, "a: K"));
  // TMA stores clip at 16 bytes, not at the element: D's rows must end on one.
  if (sb.rows % 8 != 0)
    return Status::InvalidArgument(
        "b: N (rows) must be a multiple of 8 (d's rows end on 16 bytes), got " +
        std::to_string(sb.rows));
  const int64_t lim = std::numeric_limits<int32_t>::max();
  for (auto [v, name] : {std::pair<int64_t, const char*>{sa.rows, "a: M"},
                         {sb.rows, "b: N"},
                         {sa.cols, "a: K"},
                         {sa.batches, "a: L"}})
    KESTREL_RETURN_IF_ERROR(ops::check_at_most(v, lim, name, "32-bit TMA coordinates"));
  *s = {sa.batches, sa.rows, sb.rows, sa.cols};
  // The kernel counts tiles (the smallest: 64 x 64) in 32 bits.
  if (tiles_of(*s, 64, kBlockNs[0]) > lim)
    return Status::InvalidArgument("a, b: L x M x N must be under 2^31 tiles of 64 x 64, got " +
                                   a.describe() + " x " + b.describe());
  return Status::Ok();
}

// [L][rows][cols] of `t` in boxes of box_cols x box_rows, 128-byte swizzled.
Status make_map(const TensorView& t, CUtensorMapDataType dtype, uint32_t box_cols,
                uint32_t box_rows, CUtensorMap* out) {
  rt::TmaMapSpec spec = ops::rows_spec(t, dtype, box_cols, box_rows);
  spec.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  return rt::make_tma_map(t.data, spec, out);
}

Status check_config(const Fp8GemmConfig& c, const rt::DeviceInfo* dev) {
  if (std::find(std::begin(kBlockNs), std::end(kBlockNs), c.block_n) == std::end(kBlockNs))
    return Status::InvalidArgument("config: block_n must be 64, 128 or 192, got " +
                                   std::to_string(c.block_n));
  if (c.consumer_groups != 1 && c.consumer_groups != 2)
    return Status::InvalidArgument("config: consumer_groups must be 1 or 2, got " +
                                   std::to_string(c.consumer_groups));
  if (c.stages < 2)
    return Status::InvalidArgument("config: stages must be at least 2, got " +
                                   std::to_string(c.stages));
  if (c.raster_rows < 1)
    return Status::InvalidArgument("config: raster_rows must be positive, got " +
                                   std::to_string(c.raster_rows));
  if (c.tail_split < 1)
    return Status::InvalidArgument("config: tail_split must be positive, got " +
                                   std::to_string(c.tail_split));
  const int smem = ops::fp8_gemm_smem_bytes(c.consumer_groups, c.block_n, c.stages);
  if (smem > std::min(dev->max_smem_per_block_optin, ops::kGemmSmemLimit))
    return Status::InvalidArgument("config: " + c.describe() + " needs " + std::to_string(smem) +
                                   " bytes of shared memory, more than the GPU allows");
  return Status::Ok();
}

}  // namespace

namespace ops {

rt::KernelSpec fp8_gemm_kernel_spec(const Fp8GemmConfig& cfg, bool has_r) {
  return {"fp8_gemm.cuh",
          "kestrel::fp8_gemm_kernel<" + std::to_string(block_m(cfg)) + ", " +
              std::to_string(cfg.block_n) + ", " + std::to_string(cfg.stages) + ", " +
              (has_r ? "true" : "false") + ">",
          {}};
}

int fp8_gemm_smem_bytes(int consumer_groups, int block_n, int stages) {
  const int stage = 64 * consumer_groups * kBK + block_n * kBK;
  const int out = consumer_groups * 64 * block_n * 2;
  // full and empty per stage, R landed and buffer free per warpgroup, and
  // the warpgroups' last-part flags.
  const int barriers = (2 * stages + 2 * consumer_groups) * 8 + consumer_groups * 4;
  return 1024 /* alignment slack */ + stages * stage + out + barriers;
}

Fp8TailPlan fp8_gemm_tail_plan(int64_t m, int64_t n, int64_t k, int64_t batches,
                               const Fp8GemmConfig& cfg, int sm_count) {
  const int64_t tiles = tiles_of({batches, m, n, k}, block_m(cfg), cfg.block_n);
  const int64_t waves = tiles / sm_count, rest = tiles % sm_count;
  const int64_t parts =
      rest ? std::min<int64_t>({cfg.tail_split, sm_count / rest, ceil_div(k, kBK)}) : 1;
  if (parts <= 1) return {std::min<int64_t>(tiles, sm_count), tiles, 0, 1};
  return {waves ? sm_count : rest * parts, waves * sm_count, rest, int(parts)};
}

int fp8_gemm_max_stages(int consumer_groups, int block_n) {
  int s = 2;
  while (fp8_gemm_smem_bytes(consumer_groups, block_n, s + 1) <= kGemmSmemLimit) ++s;
  return s;
}

}  // namespace ops

std::string Fp8GemmConfig::describe() const {
  return "bn" + std::to_string(block_n) + " s" + std::to_string(stages) + " r" +
         std::to_string(raster_rows) + " t" + std::to_string(tail_split) +
         (consumer_groups == 2 ? "" : " c" + std::to_string(consumer_groups));
}

std::vector<Fp8GemmConfig> fp8_gemm_config_space() {
  std::vector<Fp8GemmConfig> out;
  for (int c : kConsumerGroups)
    for (int bn : kBlockNs)
      for (int s = 2; s <= ops::fp8_gemm_max_stages(c, bn); ++s)
        for (int r : {1, 4, 8, 16})
          for (int t : kTailSplits) out.push_back({bn, s, r, t, c});
  return out;
}

Fp8GemmConfig fp8_gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches,
                                      int sm_count) {
  // The tile width and tail split whose waves take least, a wave of whole
  // tiles costing bn + 40: a narrow tile runs its MMAs less efficiently
  // (more A bytes per output, the same fixed costs). Measured (session 42,
  // 8192^3 + R, H100): bn192 808 us, bn128 844; without tail splits the
  // rule's picks were the fastest widths that `kestrel tune` found at
  // 4096^3 (bn128), M128 N8192 K8192 (bn64) and M4096 N7168 K18432 (bn192).
  // A tail part costs its share of K plus 10 stages, fitted to `kestrel
  // bench` sweeps of every width and split (session 43, H200): the
  // meeting (slots written, the last part reading them all) and the speed
  // a partial wave has over a full one (fewer SMs share DRAM and power).
  // So splits pay where K is deep: M4096 N7168 K18432 bn192 849 -> 803 us
  // (4 parts), 4096^3 bn192 128 -> 122 (3), M128 N1024 K16384 bn64 35 ->
  // 16 (8); M2048 N2048 K8192 stays at bn128 (58 us, bn192 in 3 parts 62)
  // and M128 N8192 K8192 at bn64 (25 us, bn128 in 2 parts 28).
  // M of 64 or fewer takes 64-row tiles of one consumer warpgroup: such a
  // tile waits on B's bytes, and the half-size A region leaves room for
  // more of B in flight (bn64: 13 stages for 8; H100, N8192 + R: M1 29.7 ->
  // 28.9 us, M16 N7168 K2048 12.5 -> 11.3). Their MMAs are not what limits
  // them, so a width costs its bytes and a smaller fixed cost, bn + 12,
  // and a tail part its share of K plus 6 stages per part (the last part
  // reads every part's slot; parts add no bandwidth to a stream that
  // already has it): fitted to sweeps of every width and split at M8-32
  // (session 44, H100), where bn + 40 and one 10-stage cost per split took
  // bn192 in 3 parts at N8192 K16384 (55 us, bn64 51), bn128 in 4 parts at
  // M32 N4096 K14336 (29.5, bn64 in 2 parts 27.9) and 8 parts at M16 N1024
  // K16384 (15.1, 4 parts 14.5). Since the meeting loads several parts a
  // round trip (session 45), M8 N2048 K8192 runs 4 parts in 13.1-13.3 us
  // against 2 in 13.5-13.7 (M16 N1024 K16384: 4 and 8 parts tie at
  // 13.4-13.9), which takes a part price under 8 stages, and 4 parts at
  // N1024 one over 4. At 6, a fixed cost in 1..58 keeps the other picks;
  // N16384 K8192 needs one above 0 (bn128 50.7, bn64 51.5: equal bytes
  // per SM).
  const Fp8Shape s{batches, m, n, k};
  const double k_stages = double(ops::ceil_div(k, kBK));
  Fp8GemmConfig best;
  const bool stream_bound = m <= 64;  // 64-row tiles
  best.consumer_groups = stream_bound ? 1 : 2;
  const double tile_fixed = stream_bound ? 12 : 40;
  // A split tail's meeting, in stages: per part at 64-row tiles, else once.
  const auto meeting_stages = [&](int parts) { return stream_bound ? 6.0 * parts : 10.0; };
  double best_cost = 0;
  for (int bn : kBlockNs)
    for (int t : kTailSplits) {
      Fp8GemmConfig c = best;
      c.block_n = bn;
      c.tail_split = t;
      // (A split clamped to the same parts costs the same: the smaller wins.)
      const ops::Fp8TailPlan plan = ops::fp8_gemm_tail_plan(m, n, k, batches, c, sm_count);
      const int64_t tiles = tiles_of(s, block_m(c), bn), waves = tiles / sm_count;
      double tail = tiles % sm_count ? 1.0 : 0.0;
      if (plan.parts > 1)
        tail = (std::ceil(k_stages / plan.parts) + meeting_stages(plan.parts)) / k_stages;
      const double cost = (double(waves) + tail) * (bn + tile_fixed);
      if (best_cost == 0 || cost < best_cost) {
        best_cost = cost;
        best.block_n = bn;
        best.tail_split = t;
      }
    }
  best.stages = ops::fp8_gemm_max_stages(best.consumer_groups, best.block_n);
  return best;
}

namespace {

// alpha times the scales (null: 1) the kernel reads.
Status run_fp8_gemm_add(const TensorView& a, const TensorView& b, float alpha,
                        const Fp8DeviceScales& scales, const TensorView* r, const TensorView& d,
                        cudaStream_t stream, const Fp8GemmConfig* config) {
  Fp8Shape s;
  KESTREL_RETURN_IF_ERROR(validate(a, b, r, d, &s));
  const std::pair<const float*, const char*> scale_args[] = {{scales.a, "scales.a"},
                                                             {scales.b, "scales.b"}};
  for (auto [ptr, name] : scale_args)
    if (reinterpret_cast<uintptr_t>(ptr) % 4 != 0)
      return Status::InvalidArgument(std::string(name) + ": must be 4-byte aligned (fp32)");
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (config) KESTREL_RETURN_IF_ERROR(check_config(*config, dev));
  for (auto [ptr, name] : scale_args)
    if (ptr) KESTREL_RETURN_IF_ERROR(rt::check_device_readable(ptr, *dev, name));
  if (s.m == 0 || s.n == 0 || s.batches == 0) return Status::Ok();
  if (!dev->is_hopper())
    return Status::Unsupported("fp8_gemm_add needs an sm_90 GPU (wgmma), this GPU is " +
                               dev->arch());
  const Fp8GemmConfig cfg =
      config ? *config : fp8_gemm_default_config(s.m, s.n, s.k, s.batches, dev->sm_count);

  CUtensorMap map_a, map_a_tail, map_b, map_r, map_d;
  // The last row tile's A box: its rows of M, rounded up to 8.
  const int bm = block_m(cfg);
  const int a_tail_rows = int(ops::ceil_div(s.m - (s.m - 1) / bm * bm, 8) * 8);
  KESTREL_RETURN_IF_ERROR(make_map(a, CU_TENSOR_MAP_DATA_TYPE_UINT8, kBK, uint32_t(bm), &map_a));
  KESTREL_RETURN_IF_ERROR(
      make_map(a, CU_TENSOR_MAP_DATA_TYPE_UINT8, kBK, uint32_t(a_tail_rows), &map_a_tail));
  KESTREL_RETURN_IF_ERROR(
      make_map(b, CU_TENSOR_MAP_DATA_TYPE_UINT8, kBK, uint32_t(cfg.block_n), &map_b));
  // R and D move in chunks of 64 rows x 64 columns (one 128-byte swizzle row).
  KESTREL_RETURN_IF_ERROR(make_map(d, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, 64, &map_d));
  if (r) {
    KESTREL_RETURN_IF_ERROR(make_map(*r, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, 64, &map_r));
  } else {
    map_r = map_d;  // unused
  }
  const ops::Fp8TailPlan plan =
      ops::fp8_gemm_tail_plan(s.m, s.n, s.k, s.batches, cfg, dev->sm_count);
  Fp8GemmParams p{int(s.m),   int(s.n),        int(s.k),    int(s.batches),
                  alpha,      cfg.raster_rows, a_tail_rows, int(plan.tail_begin),
                  plan.parts, nullptr,         nullptr,     scales.a,
                  scales.b};
  if (plan.parts > 1) {
    // Arrival counts per tail tile and warpgroup (left zero by every call)
    // and a slot of fp32 sums per part: warpgroups x 128 threads x block_n / 2.
    void* arrivals = nullptr;
    void* partial = nullptr;
    const size_t groups = size_t(cfg.consumer_groups);
    KESTREL_RETURN_IF_ERROR(rt::stream_workspace(
        stream, size_t(plan.tail_tiles) * groups * sizeof(unsigned), &arrivals));
    KESTREL_RETURN_IF_ERROR(rt::stream_workspace(
        stream,
        size_t(plan.tail_tiles * plan.parts) * groups * 128 * (cfg.block_n / 2) * sizeof(float),
        &partial, rt::WorkspaceUse::kScratch));
    p.arrivals = static_cast<unsigned*>(arrivals);
    p.partial = static_cast<float*>(partial);
  }

  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get(ops::fp8_gemm_kernel_spec(cfg, r != nullptr), &kernel));
  rt::LaunchShape ls;
  ls.grid = dim3(unsigned(plan.grid));
  ls.block = dim3(unsigned(128 * (1 + cfg.consumer_groups)));
  ls.smem_bytes = size_t(ops::fp8_gemm_smem_bytes(cfg.consumer_groups, cfg.block_n, cfg.stages));
  return kernel(ls, stream, map_a, map_a_tail, map_b, map_r, map_d, p);
}

}  // namespace

Status fp8_gemm_add(const TensorView& a, const TensorView& b, float alpha, const TensorView* r,
                    const TensorView& d, cudaStream_t stream, const Fp8GemmConfig* config) {
  return run_fp8_gemm_add(a, b, alpha, {}, r, d, stream, config);
}

Status fp8_gemm_add(const TensorView& a, const TensorView& b, const Fp8DeviceScales& scales,
                    const TensorView* r, const TensorView& d, cudaStream_t stream,
                    const Fp8GemmConfig* config) {
  // (1 * sa) * sb: the bits of a host alpha sa * sb.
  return run_fp8_gemm_add(a, b, 1.0f, scales, r, d, stream, config);
}

}  // namespace kestrel
