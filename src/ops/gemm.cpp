// Host side of the NVFP4 GEMM: validate, pre-pass the activations, build the
// TMA maps, choose a configuration, launch kernels/nvfp4_gemm.cuh.
#include "kestrel/gemm.h"

#include <algorithm>
#include <string>

#include "common/nvfp4_weight_order.cuh"
#include "kestrel/gemv.h"
#include "ops/act_prepass.h"
#include "ops/gemm_common.h"
#include "ops/gemv_launch.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/nvfp4_operand.h"
#include "ops/tuning_table.h"
#include "ops/validate.h"
#include "ops/weight_pack.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/launcher.h"
#include "runtime/scratch.h"
#include "runtime/tma.h"

namespace kestrel {
namespace {

struct GemmParams {  // mirrors kestrel::GemmParams in kernels/nvfp4_gemm.cuh
  const void* sw;
  long long sw_batch, sw_row;
  const void* sw2;
  long long sw2_batch, sw2_row;
  void* c;
  long long c_batch, c_row;
  int m, n, k;
  int batches;
  int c_tma;
  float alpha, alpha2;
  float* partial;
  int* arrivals;
  int tail_stages, tail_ctas;
  const void* w_packed;
  const void* w2_packed;
  long long w_packed_batch;
  const int* group_ends;
  int groups;
};

}  // namespace

namespace ops {

Status launch_nvfp4_gemm(const Nvfp4View& a, const Nvfp4View& b, const Nvfp4View* b2, bool w_packed,
                         const TensorView& c, const GemmShape& shape, const GemmConfig& cfg,
                         cudaStream_t stream) {
  const bool dual = b2 != nullptr;
  const bool through_l2 = cfg.partials_through_l2();
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  rt::LaunchShape ls = gemm_launch_shape(shape, cfg, dev->sm_count, dual, w_packed);
  KESTREL_RETURN_IF_ERROR(check_gemm_launch(shape, cfg, ls, dev->sm_count, dual));
  rt::StreamScratch x16;
  const int64_t x_rows = activation_rows(shape, cfg.block_n);
  KESTREL_RETURN_IF_ERROR(run_act_prepass(a, x_rows, stream, &x16));
  CUtensorMap map_x, map_w, map_w2, map_c;
  KESTREL_RETURN_IF_ERROR(make_activation_map(x16.get(), shape, cfg.block_n, &map_x));
  GemmParams p{};
  if (w_packed) {  // bulk copies of the packed blocks; the weight maps are stand-ins
    map_w = map_w2 = map_x;
    p.w_packed = b.values.data;
    p.w2_packed = dual ? b2->values.data : b.values.data;
    p.w_packed_batch = packed_weight_batch_bytes(shape.n, shape.k);
  } else {
    const int box_rows = gemm_tile_columns(cfg, dual);
    KESTREL_RETURN_IF_ERROR(make_weight_map(b, box_rows, &map_w));
    if (dual) {
      KESTREL_RETURN_IF_ERROR(make_weight_map(*b2, box_rows, &map_w2));
    } else {
      map_w2 = map_w;
    }
  }
  const Nvfp4Operand w = nvfp4_operand(b), w2 = nvfp4_operand(dual ? *b2 : b);
  p.sw = w.scales;
  p.sw_batch = w.scales_batch;
  p.sw_row = w.scales_row;
  p.sw2 = w2.scales;
  p.sw2_batch = w2.scales_batch;
  p.sw2_row = w2.scales_row;
  p.c = c.data;
  p.c_batch = shape.c_batch;
  p.c_row = shape.c_row;
  p.m = int(shape.m);
  p.n = int(shape.n);
  p.k = int(shape.k);
  p.batches = int(shape.batches);
  p.group_ends = shape.group_ends;
  p.groups = int(shape.groups);
  // Without a K split C leaves by TMA stores where its layout allows them
  // (64 columns a store: not from tiles of 96; not a group's rows, which
  // tiles of its own do not cover whole).
  p.c_tma = cfg.split_k == 1 && shape.groups == 0 && gemm_tile_columns(cfg, dual) % 64 == 0 &&
            make_output_map(c, shape, cfg.block_n, &map_c).ok();
  if (!p.c_tma) map_c = map_x;  // unused
  p.alpha = a.global_scale * b.global_scale * kDecodeUnitSquared;
  p.alpha2 = dual ? a.global_scale * b2->global_scale * kDecodeUnitSquared : 0.0f;

  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get(gemm_kernel_spec(c.dtype, cfg, b.layout == ScaleLayout::kBlocked, dual,
                                       w_packed, shape.groups > 0),
                      &kernel));
  if (through_l2) {
    // Arrival counters per tile (left zero by every call) and a slot of
    // fp32 accumulators per part of a tile: 256 threads x block_n / 2.
    const int64_t tiles = gemm_tiles(shape, cfg, dual);
    const GemmKTail tail = gemm_config_k_tail(shape, cfg, dev->sm_count, dual);
    p.tail_stages = tail.stages;
    p.tail_ctas = tail.ctas;
    const int64_t parts = cfg.split_k + (p.tail_ctas > 0);
    void* arrivals = nullptr;
    void* partial = nullptr;
    KESTREL_RETURN_IF_ERROR(
        rt::stream_workspace(stream, size_t(tiles) * sizeof(int), &arrivals));
    KESTREL_RETURN_IF_ERROR(rt::stream_workspace(
        stream, size_t(tiles * parts) * 256 * (cfg.block_n / 2) * sizeof(float), &partial,
        rt::WorkspaceUse::kScratch));
    p.arrivals = static_cast<int*>(arrivals);
    p.partial = static_cast<float*>(partial);
  }
  // Starts while the pre-pass runs: the weights' first stages load before
  // the kernel waits for the pre-pass's output (griddepcontrol).
  ls.overlap_previous = true;
  return kernel(ls, stream, map_w, map_w2, map_x, map_c, p);
}

namespace {

Status fit_split_to_one_wave(const GemmShape& shape, DType out, bool w_blocked, bool dual,
                             bool w_packed, const rt::DeviceInfo* dev, GemmConfig* cfg) {
  while (cfg->split_k > 1 && !cfg->partials_through_l2()) {
    const rt::LaunchShape ls = gemm_launch_shape(shape, *cfg, dev->sm_count, dual, w_packed);
    rt::Kernel kernel;
    KESTREL_RETURN_IF_ERROR(
        rt::Kernel::get(gemm_kernel_spec(out, *cfg, w_blocked, dual, w_packed), &kernel));
    int resident = 0;
    KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(ls, &resident));
    const int64_t clusters = int64_t(ls.grid.x / ls.cluster.x) * ls.grid.y * ls.grid.z;
    if (clusters <= resident) break;
    // Without a cluster the same split fits if its CTAs do (one per SM).
    if (clusters * cfg->split_k <= dev->sm_count) {
      cfg->split_l2 = true;
      break;
    }
    cfg->split_k /= 2;
  }
  return Status::Ok();
}

}  // namespace

Status resolve_gemm_config(const GemmConfig* given, const GemmConfig& heuristic,
                           const GemmShape& shape, DType out, bool w_blocked, bool dual,
                           bool w_packed, GemmConfig* cfg) {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  const GemmConfig* tuned = nullptr;  // the tuning table's, for this GPU and exact shape
  if (!given) {
    const TuningTable* table = nullptr;
    KESTREL_RETURN_IF_ERROR(active_tuning_table(&table));
    if (!table->gemm().empty()) {
      const GemmTuningKey key{dev->name, dual,          shape.m,  shape.n,
                              shape.k,   shape.batches, w_packed, w_blocked};
      if (const GemmTuned* e = table->find(key)) tuned = &e->config;
    }
  }
  *cfg = given ? *given : tuned ? *tuned : heuristic;
  if (!given && !tuned && w_packed)
    cfg->stages = gemm_default_stages(cfg->block_n, cfg->k_tail, true, cfg->consumer_groups);
  KESTREL_RETURN_IF_ERROR(check_gemm_config(*cfg, dual, dev, w_packed));
  if (given || tuned) return Status::Ok();  // as given, or as timed by `kestrel tune`
  return fit_split_to_one_wave(shape, out, w_blocked, dual, w_packed, dev, cfg);
}

}  // namespace ops

std::string GemmConfig::describe() const {
  return "bn" + std::to_string(block_n) + " s" + std::to_string(stages) + " k" +
         std::to_string(split_k) + (k_tail ? " tail" : split_l2 && split_k > 1 ? " l2" : "") +
         (consumer_groups == 2 ? "" : " c" + std::to_string(consumer_groups));
}

const std::vector<int>& gemm_block_n_choices() {
  static const std::vector<int> v = {8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  return v;
}

std::vector<GemmConfig> gemm_config_space(bool dual) {
  std::vector<GemmConfig> out;
  for (int bn : gemm_block_n_choices())
    for (int s = 2; s <= 8; ++s) {
      for (int k : {1, 2, 4, 8})
        if (ops::gemm_smem_bytes(bn, s) <= ops::kGemmSmemLimit)
          for (bool tail : {false, true}) out.push_back({bn, s, k, false, tail});
      if (dual && bn <= 128 && ops::gemm_smem_bytes(bn, s, false, 3) <= ops::kGemmSmemLimit)
        out.push_back({bn, s, 1, false, false, 3});
    }
  return out;
}

namespace {

// One token tile of up to 256, then a K split and tail for the idle SMs.
GemmConfig tile_and_split(int64_t m, int64_t n, int64_t k, int64_t batches, int sm_count) {
  GemmConfig c;
  // Tokens are the wgmma N side: the smallest tile that holds them all, up to 256.
  c.block_n = ops::gemm_block_n_holding(m);
  const int64_t tiles = ops::gemm_tiles(m, n, batches, c, false);
  const int64_t k_stages = ops::ceil_div(k, ops::kGemmBlockK);
  // Split K over a cluster while the grid leaves SMs idle and each CTA keeps
  // at least 8 stages of K.
  while (c.split_k < 8 && tiles * c.split_k * 2 <= int64_t(sm_count) + sm_count / 8 &&
         k_stages / (c.split_k * 2) >= 8)
    c.split_k *= 2;
  // The SMs the split leaves idle take every tile's last K stages where that
  // shortens the longest CTA's run by a tenth or more and the split's CTAs
  // keep 48 stages or more: the tail's parts meet in L2, which costs more
  // than a cluster split's meeting. Measured on the H100 (session 27):
  // M128 N7168 K16384 (64 stages per CTA) 51.1 -> 49.3 us, dual M512 N3072
  // K7168 (56) 75.4 -> 73.5; dual M256 N3072 K4096 (32) 29.5 -> 30.3 at the
  // best tail length, M128 N7168 K2048 (8) 17.0 -> 22.7.
  const ops::GemmKTail tail = ops::gemm_k_tail(tiles, c.split_k, k_stages, sm_count);
  c.k_tail = tail.ctas > 0 && tail.longest * 10 <= ops::ceil_div(k_stages, c.split_k) * 9 &&
             k_stages / c.split_k >= 48;
  c.stages = ops::gemm_default_stages(c.block_n, c.k_tail, false);
  return c;
}

}  // namespace

GemmConfig gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches, int sm_count) {
  const GemmConfig one = tile_and_split(m, n, k, batches, sm_count);
  if (one.split_k == 1 || one.block_n <= 128 || one.k_tail) return one;
  // A second tile of 128 tokens beats a K split of 256-token tiles, but not
  // a split with a K tail. H100, dual GEMM (session 13, splits added by
  // reduce-scatter): M256 N3072 K4096 bn128 k1 30.0 us, bn256 k2 33.2;
  // M256 N4096 K7168 46.4 vs 48.7. Plain GEMM, packed (session 39), us,
  // against the one-tile pick: M512 N4096 K7168 45.3 vs 47.8, M256 N4096
  // K7168 28.9 vs 36.3, M384 N4096 K7168 40.8 vs 47.5, M256 N1024 K16384 26.4
  // vs 34.5, M1024 N1024 K16384 62.2 vs 67.5; but M256 N7168 K16384 90.3 vs
  // 86.8 and M192 N7168 K16384 88.7 vs 66.3 where the pick had a tail.
  const int64_t token_tiles = ops::ceil_div(m, 128);
  const GemmConfig two = tile_and_split(128, n, k, batches * token_tiles, sm_count);
  // Where 128-token tiles pad more (M129..192), the one-tile pick stays if
  // it runs as many CTAs and meets over a cluster: a split of two, or one
  // of four on up to three quarters of the SMs (about 30 clusters of four
  // fit at once on 132 SMs; beyond that the split meets through L2, which
  // costs more than the padding). H100, packed, us, two
  // tiles against one (sessions 39, 40): M192 N8192 K8192 49.2 vs 41.1
  // (bn192 k2), M192 N3072 K4096 20.7 vs 19.9 (k4 on 96 SMs), dual M160
  // N4096 K7168 41.8 vs 38.0 (k2); but M192 N4096 K4096 21.0 vs 23.3 and
  // dual M192 N2048 K4096 21.1 vs 24.6 (k4 through L2), M192 N1024 K4096
  // 16.0 vs 18.8 (32 CTAs against 64).
  const int64_t one_ctas = ops::gemm_tiles(m, n, batches, one, false) * one.split_k;
  const int64_t two_ctas = ops::gemm_tiles(128, n, batches * token_tiles, two, false) * two.split_k;
  const bool one_pads_less = token_tiles * 128 > ops::ceil_div(m, one.block_n) * one.block_n;
  const bool one_meets_in_cluster = one.split_k <= 2 || one_ctas * 4 <= int64_t(sm_count) * 3;
  if (one_pads_less && one_ctas >= two_ctas && one_meets_in_cluster) return one;
  return two;
}

namespace {

Status run_gemm(const Nvfp4View& a, const Nvfp4View& b, bool w_packed, const TensorView& c,
                cudaStream_t stream, const GemmConfig* config) {
  ops::GemmShape shape;
  KESTREL_RETURN_IF_ERROR(ops::validate_gemm(a, b, c, "c", &shape));
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (!dev->is_hopper())
    return Status::Unsupported("gemm_nvfp4 needs an sm_90 GPU (wgmma), this GPU is " + dev->arch());
  if (shape.m == 0 || shape.n == 0 || shape.batches == 0) return Status::Ok();

  // One to sixteen tokens: the register GEMV is the memory-bound specialist
  // (it streams row-major weights; from five tokens, or four on long rows,
  // it reads the activation pre-pass); the tokens share each decoded weight
  // group. H100, session 46, M2 against the GEMM kernel: 1.04-2.1x on eight
  // decode shapes (N8192 K8192 27.9 -> 24.1 us, N28672 K4096 41.2 -> 32.6,
  // N4096 K4096 14.0 -> 11.3, N1024 K4096 11.7 -> 5.5); launch_gemv_tokens
  // says where each token count runs it.
  if (shape.m <= ops::kGemvMaxTokens && config == nullptr && !w_packed) {
    const TensorView cv = TensorView::strided(c.data, c.dtype, {shape.batches, shape.n},
                                              {shape.c_batch, 1});
    if (shape.m == 1) return gemv_nvfp4(b, a, cv, stream);
    const ops::GemvProblem p{b, a, cv, shape.batches, shape.n, shape.k, shape.m, shape.c_row};
    bool ran = false;
    const Status st = ops::launch_gemv_tokens(p, *dev, stream, &ran);
    if (ran || !st.ok()) return st;
  }

  GemmConfig cfg;
  KESTREL_RETURN_IF_ERROR(ops::resolve_gemm_config(
      config, gemm_default_config(shape.m, shape.n, shape.k, shape.batches, dev->sm_count), shape,
      c.dtype, b.layout == ScaleLayout::kBlocked, false, w_packed, &cfg));
  return ops::launch_nvfp4_gemm(a, b, nullptr, w_packed, c, shape, cfg, stream);
}

}  // namespace

Status gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c, cudaStream_t stream,
                  const GemmConfig* config) {
  return run_gemm(a, b, false, c, stream, config);
}

Status gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b, const TensorView& c,
                  cudaStream_t stream, const GemmConfig* config) {
  return run_gemm(a, ops::packed_weight_view(b), true, c, stream, config);
}

}  // namespace kestrel
