#include "ops/gemm_common.h"

#include <algorithm>
#include <climits>
#include <string>

#include "common/nvfp4_weight_order.cuh"
#include "kestrel/gemm.h"
#include "ops/act_prepass.h"
#include "ops/tma_views.h"
#include "ops/validate.h"
#include "runtime/tma.h"

namespace kestrel::ops {

int gemm_smem_bytes(int block_n, int stages, bool w_packed, int consumers) {
  const int weights = consumers * (w_packed ? kPackedBlockStageBytes : kPackedValueBytes);
  const int stage = weights + block_n * kGemmBlockK * 2;
  return stages * stage + 2 * stages * 8 + 1024;  // + barriers + 1024-byte alignment slack
}

int grouped_gemm_smem_bytes(int block_n, int stages, bool w_packed, int consumers, int64_t groups) {
  // 16 bytes past the barriers (the split's flag word), then two ints a group.
  return gemm_smem_bytes(block_n, stages, w_packed, consumers) +
         (groups > 0 ? 16 + int(8 * groups) : 0);
}

int gemm_max_stages(int block_n, bool w_packed, int consumers) {
  int s = 8;
  while (s > 2 && gemm_smem_bytes(block_n, s, w_packed, consumers) > kGemmSmemLimit) --s;
  return s;
}

int gemm_default_stages(int block_n, bool k_tail, bool w_packed, int consumers) {
  const int deepest = gemm_max_stages(block_n, w_packed, consumers);
  // Every CTA asks for its whole ring at once at the start; past 4 stages
  // of 32..128 tokens that burst costs more than the depth hides. H100,
  // session 30, µs, 4 stages against the deepest (packed unless noted):
  // M128 N4096 K7168 k4 l2 22.8 / 23.6 (unpacked 24.2 / 25.1), N7168 K2048
  // k2 16.5 / 16.9, dual M256 N4096 K7168 44.1 / 45.1 (unpacked 45.8 /
  // 47.0), dual M256 N3072 K4096 28.8 / 29.3, M64 N4096 K7168 bn64 k4 l2
  // 18.0 / 19.7, M32 N7168 K2048 bn32 13.0 / 13.9, seed 1's tail 47.4 /
  // 47.8. Not unpacked seed 1's tail (54.1 / 53.1); not bn16 (M16 N8192
  // K8192 24.0 / 22.8), which has too little work per stage.
  if (block_n < 32 || block_n > 128 || (k_tail && !w_packed)) return deepest;
  return std::min(deepest, 4);
}

namespace {

// grouped: b's batches are the groups, a and c one batch.
Status validate_operands(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                         const char* c_name, bool grouped, GemmShape* out) {
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(a, "a"));
  KESTREL_RETURN_IF_ERROR(validate_nvfp4(b, "b"));
  GemmShape s{a.batches(), a.rows(), b.rows(), a.k(), 0, 0};
  if (grouped) {
    if (a.batches() != 1)
      return Status::InvalidArgument(
          "a: a grouped GEMM's activations are one [M][K] matrix (the groups' rows one after "
          "another), got " +
          std::to_string(a.batches()) + " batches");
    s.batches = b.batches();
  } else if (b.batches() != s.batches) {
    return Status::InvalidArgument("b: batch count must equal a's (" + std::to_string(s.batches) +
                                   "), got " + std::to_string(b.batches()));
  }
  const int64_t c_batches = grouped ? 1 : s.batches;
  if (b.k() != s.k)
    return Status::InvalidArgument("b: K must equal a's K (" + std::to_string(s.k) + "), got " +
                                   std::to_string(b.k()));
  KESTREL_RETURN_IF_ERROR(check_positive(s.k, "K"));
  KESTREL_RETURN_IF_ERROR(check_multiple(s.k, 64, "K"));
  KESTREL_RETURN_IF_ERROR(check_at_most(s.batches, 65535, "L", "grid.z limit"));
  KESTREL_RETURN_IF_ERROR(check_at_most(s.m, int64_t(1) << 30, "M", "32-bit index"));
  KESTREL_RETURN_IF_ERROR(check_at_most(s.n, int64_t(1) << 30, "N", "32-bit index"));
  KESTREL_RETURN_IF_ERROR(check_at_most(s.k, int64_t(1) << 30, "K", "32-bit index"));
  KESTREL_RETURN_IF_ERROR(check_dtype(c, {DType::kF16, DType::kBF16}, c_name));
  KESTREL_RETURN_IF_ERROR(check_rank(c, 2, 3, c_name));
  KESTREL_RETURN_IF_ERROR(check_row_major(c, c_name));
  KESTREL_RETURN_IF_ERROR(check_not_null(c, c_name));
  const Shape3 cs = shape3(c);
  if ((c.rank == 2 && c_batches != 1) || cs.batches != c_batches || cs.rows != s.m ||
      cs.cols != s.n)
    return Status::InvalidArgument(std::string(c_name) + ": shape must be [L][M][N] = [" +
                                   std::to_string(c_batches) + "][" + std::to_string(s.m) + "][" +
                                   std::to_string(s.n) + "] (rank 2 when L = 1), got " +
                                   c.describe());
  s.c_batch = cs.batch_stride;
  s.c_row = cs.row_stride;
  // TMA reads the packed weights: 16-byte aligned base and strides.
  KESTREL_RETURN_IF_ERROR(check_aligned(b.values, 16, "b.values"));
  KESTREL_RETURN_IF_ERROR(check_aligned(a.values, 4, "a.values"));
  // The consumers read the scale codes of two adjacent blocks as one 2-byte
  // load, at 32-bit offsets within the batch.
  KESTREL_RETURN_IF_ERROR(check_aligned(b.scales, 2, "b.scales"));
  const int64_t scale_span = b.layout == ScaleLayout::kLinear
                                 ? (s.n - 1) * shape3(b.scales).row_stride + s.k / 16
                                 : (s.n + 127) / 128 * ((s.k + 63) / 64) * 512;
  KESTREL_RETURN_IF_ERROR(
      check_at_most(scale_span, INT32_MAX, "b.scales bytes per batch", "32-bit offsets"));
  for (float g : {a.global_scale, b.global_scale})
    if (!(g == g)) return Status::InvalidArgument("global_scale: must not be NaN");
  *out = s;
  return Status::Ok();
}

}  // namespace

Status validate_gemm(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                     const char* c_name, GemmShape* out) {
  return validate_operands(a, b, c, c_name, false, out);
}

Status validate_grouped_gemm(const Nvfp4View& a, const Nvfp4View& b, const int32_t* group_ends,
                             int64_t groups, const TensorView& c, const char* c_name,
                             GemmShape* out) {
  if (groups < 1 || groups > kGemmMaxGroups)
    return Status::InvalidArgument("groups.count: must be 1.." + std::to_string(kGemmMaxGroups) +
                                   ", got " + std::to_string(groups));
  if (group_ends == nullptr) return Status::InvalidArgument("groups.ends: must not be null");
  if (reinterpret_cast<uintptr_t>(group_ends) % 4 != 0)
    return Status::InvalidArgument("groups.ends: must be 4-byte aligned (int32)");
  KESTREL_RETURN_IF_ERROR(validate_operands(a, b, c, c_name, true, out));
  if (b.batches() != groups)
    return Status::InvalidArgument("b: needs one weight per group (" + std::to_string(groups) +
                                   " batches), got " + std::to_string(b.batches()));
  // The kernel counts tiles and rows in int: the most tiles any grouping
  // can take stays under 2^31.
  const int64_t most_tiles = ceil_div(out->n, 64) * (ceil_div(out->m, 8) + groups);
  KESTREL_RETURN_IF_ERROR(
      check_at_most(most_tiles, INT32_MAX, "tiles (N / 64 x (M / 8 + groups))", "32-bit index"));
  out->groups = groups;
  out->group_ends = group_ends;
  return Status::Ok();
}

Status check_second_weight(const Nvfp4View& b1, const Nvfp4View& b2) {
  if (b2.rows() != b1.rows())
    return Status::InvalidArgument("b2: N must equal b1's (" + std::to_string(b1.rows()) +
                                   "), got " + std::to_string(b2.rows()));
  if (b2.layout != b1.layout)
    return Status::InvalidArgument(std::string("b2: scale layout must equal b1's (") +
                                   scale_layout_name(b1.layout) + ")");
  return Status::Ok();
}

Status check_gemm_config(const GemmConfig& cfg, bool dual, const rt::DeviceInfo* dev,
                         bool w_packed) {
  const auto& bns = gemm_block_n_choices();
  const int block_n = cfg.block_n, stages = cfg.stages, split_k = cfg.split_k;
  if (std::find(bns.begin(), bns.end(), block_n) == bns.end() || stages < 2 || stages > 8 ||
      (split_k != 1 && split_k != 2 && split_k != 4 && split_k != 8))
    return Status::InvalidArgument("config: block_n must be one of gemm_block_n_choices(), "
                                   "stages 2..8, split_k 1/2/4/8");
  if (cfg.consumer_groups != 2 && cfg.consumer_groups != 3)
    return Status::InvalidArgument("config: consumer_groups must be 2 or 3, got " +
                                   std::to_string(cfg.consumer_groups));
  // (Three warpgroups have 160 registers a thread: 128 tokens' sums and a
  // stage's fragments twice.)
  if (cfg.consumer_groups == 3 && (!dual || split_k != 1 || cfg.k_tail || block_n > 128))
    return Status::InvalidArgument(
        "config: consumer_groups 3 needs the dual GEMM with split_k 1, no k_tail and block_n "
        "<= 128");
  const int smem = gemm_smem_bytes(block_n, stages, w_packed, cfg.consumer_groups);
  if (smem > dev->max_smem_per_block_optin)
    return Status::InvalidArgument("config: needs " + std::to_string(smem) +
                                   " bytes of shared memory, the GPU allows " +
                                   std::to_string(dev->max_smem_per_block_optin));
  return Status::Ok();
}

Status make_weight_map(const Nvfp4View& b, int box_rows, CUtensorMap* out) {
  const rt::TmaMapSpec spec = byte_rows_spec(b.values, kGemmBlockK / 2, uint32_t(box_rows));
  return rt::make_tma_map(b.values.data, spec, out);
}

int64_t activation_rows(const GemmShape& s, int block_n) {
  return (ceil_div(s.m, block_n) + (s.groups > 0)) * block_n;
}

Status make_activation_map(const void* x16, const GemmShape& s, int block_n, CUtensorMap* out) {
  const int64_t kp = prepass_kp(s.k), rows = activation_rows(s, block_n);
  rt::TmaMapSpec x;
  x.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  x.rank = 3;
  x.dims[0] = uint64_t(kp);
  x.dims[1] = uint64_t(rows);
  x.dims[2] = uint64_t(s.groups > 0 ? 1 : s.batches);
  x.strides_bytes[0] = uint64_t(kp * 2);
  x.strides_bytes[1] = uint64_t(kp * 2 * rows);
  x.box[0] = 64;  // one 128-byte swizzle atom of K
  x.box[1] = uint32_t(block_n);
  x.box[2] = 1;
  x.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  return rt::make_tma_map(x16, x, out);
}

Status make_output_map(const TensorView& c, const GemmShape& s, int block_n, CUtensorMap* out) {
  const int64_t row_bytes = s.c_row * 2;
  // With one batch its stride is free: any multiple of 16 bytes serves.
  const int64_t batch_bytes = s.batches == 1 ? row_bytes * s.m : s.c_batch * 2;
  if (reinterpret_cast<uintptr_t>(c.data) % 16 != 0 || row_bytes % 16 != 0 || batch_bytes % 16 != 0)
    return Status::InvalidArgument("c: TMA stores need 16-byte aligned rows and batches");
  rt::TmaMapSpec spec;
  spec.dtype =
      c.dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  spec.rank = 3;
  spec.dims[0] = uint64_t(s.n);
  spec.dims[1] = uint64_t(s.m);
  spec.dims[2] = uint64_t(s.batches);
  spec.strides_bytes[0] = uint64_t(row_bytes);
  spec.strides_bytes[1] = uint64_t(batch_bytes);
  spec.box[0] = 64;  // one 128-byte swizzle row
  spec.box[1] = uint32_t(block_n);
  spec.box[2] = 1;
  spec.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  return rt::make_tma_map(c.data, spec, out);
}

int gemm_block_n_holding(int64_t rows) {
  for (int bn : gemm_block_n_choices())
    if (bn >= rows) return bn;
  return gemm_block_n_choices().back();
}

int gemm_tile_columns(const GemmConfig& cfg, bool dual) {
  return dual ? 32 * cfg.consumer_groups : kGemmBlockM;
}

int64_t gemm_tiles(int64_t m, int64_t n, int64_t batches, const GemmConfig& cfg, bool dual) {
  return ceil_div(n, gemm_tile_columns(cfg, dual)) * ceil_div(m, cfg.block_n) * batches;
}

int64_t gemm_tiles(const GemmShape& s, const GemmConfig& cfg, bool dual) {
  if (s.groups > 0) {  // each group pads at most one token tile
    const int64_t token_tiles =
        std::min(ceil_div(s.m, cfg.block_n) + s.groups - 1, ceil_div(s.m, cfg.block_n) * s.groups);
    return gemm_tiles(token_tiles * cfg.block_n, s.n, 1, cfg, dual);
  }
  return gemm_tiles(s.m, s.n, s.batches, cfg, dual);
}

GemmKTail gemm_k_tail(int64_t tiles, int split_k, int64_t k_stages, int sm_count) {
  GemmKTail best;
  const int64_t idle = int64_t(sm_count) - tiles * split_k;
  if (idle <= 0 || k_stages < split_k + 1) return best;
  // Each tail CTA takes up to `per` tiles; the tail length t balances per x t
  // stages, and a stage's time for each tile it leaves in L2 before its
  // next, against a split share of the other k_stages - t: the longest run
  // is max(share(t), tail(t)), share non-increasing, tail increasing. The
  // best t (the first on ties) is where tail first reaches share, or the
  // first t of share's run of equal values just before it (found by
  // bisection: this runs at every launch, and k_stages reaches 2^23).
  const int64_t per = ceil_div(tiles, idle);
  auto share = [&](int64_t t) { return ceil_div(k_stages - t, split_k); };
  auto tail = [&](int64_t t) { return per * t + per - 1; };
  int64_t lo = 1, hi = k_stages - split_k + 1;  // the first t with tail(t) >= share(t), or hi
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (tail(mid) >= share(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  best.longest = INT64_MAX;
  if (lo > 1) {  // share's value at lo - 1, from its first t
    best.longest = share(lo - 1);
    best.stages = int(std::max<int64_t>(1, k_stages - split_k * best.longest));
  }
  if (lo <= k_stages - split_k && tail(lo) < best.longest) {
    best.longest = tail(lo);
    best.stages = int(lo);
  }
  best.ctas = int(ceil_div(tiles, per));
  return best;
}

GemmKTail gemm_config_k_tail(const GemmShape& s, const GemmConfig& cfg, int sm_count, bool dual) {
  if (!cfg.k_tail) return {};
  return gemm_k_tail(gemm_tiles(s, cfg, dual), cfg.split_k, ceil_div(s.k, kGemmBlockK), sm_count);
}

Status check_gemm_launch(const GemmShape& s, const GemmConfig& cfg, const rt::LaunchShape& ls,
                         int sm_count, bool dual) {
  if (cfg.k_tail && gemm_config_k_tail(s, cfg, sm_count, dual).ctas == 0)
    return Status::InvalidArgument(
        "config: k_tail needs SMs the split leaves idle (tiles x split_k = " +
        std::to_string(gemm_tiles(s, cfg, dual) * cfg.split_k) + " of " +
        std::to_string(sm_count) + ") and at least split_k + 1 stages of 128 K values (K = " +
        std::to_string(s.k) + ")");
  if (cfg.partials_through_l2() && ls.grid.x == unsigned(INT32_MAX))
    return Status::InvalidArgument("config: tiles x split_k must be under 2^31 (grid.x)");
  if (ls.grid.y > 65535)
    return Status::InvalidArgument(
        "config: with a cluster split the token tiles ceil(M / block_n) = " +
        std::to_string(ls.grid.y) +
        " must be at most 65535 (grid.y): take a larger block_n, split_l2 or split_k 1");
  return Status::Ok();
}

rt::LaunchShape gemm_launch_shape(const GemmShape& s, const GemmConfig& cfg, int sm_count,
                                  bool dual, bool w_packed) {
  rt::LaunchShape shape;
  const int64_t tiles = gemm_tiles(s, cfg, dual);
  if (cfg.partials_through_l2()) {
    const int64_t tail = gemm_config_k_tail(s, cfg, sm_count, dual).ctas;
    shape.grid = dim3(unsigned(std::min<int64_t>(tiles * cfg.split_k + tail, INT32_MAX)));
  } else if (cfg.split_k == 1) {
    shape.grid = dim3(unsigned(std::min<int64_t>(tiles, sm_count)));
  } else {
    const int64_t tiles_m = ceil_div(s.m, cfg.block_n);
    shape.grid = dim3(unsigned(tiles / tiles_m / s.batches * cfg.split_k), unsigned(tiles_m),
                      unsigned(s.batches));
    shape.cluster = dim3(unsigned(cfg.split_k), 1, 1);
  }
  shape.block = dim3(unsigned(128 * (cfg.consumer_groups + 1)));  // + the producer warpgroup
  shape.smem_bytes = size_t(
      grouped_gemm_smem_bytes(cfg.block_n, cfg.stages, w_packed, cfg.consumer_groups, s.groups));
  return shape;
}

}  // namespace kestrel::ops
