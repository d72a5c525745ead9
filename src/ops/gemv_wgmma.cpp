// Host side of the wgmma GEMV (kernels/nvfp4_gemv_wgmma.cuh): the rules its
// TMA loads need, the split-K items handed out at run time, and the
// workspace for their counters and for tiles cut between items.
#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/gemv_launch.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/tma_views.h"
#include "ops/validate.h"
#include "runtime/launcher.h"
#include "runtime/scratch.h"
#include "runtime/tma.h"

namespace kestrel::ops {
namespace {

struct SplitKItems {  // mirrors kestrel::SplitKItems (kernels/common/split_k_items.cuh)
  int tiles_m, chunks, seg_chunks, segs;
};

struct WgmmaParams {  // mirrors kestrel::GemvWgmmaParams in kernels/nvfp4_gemv_wgmma.cuh
  GemvOperandArgs o;
  int* counters;
  float* partial;
  SplitKItems work;
  int items, ctas;
  int groups;
  int sfa_tma;
};

// The constants of kernels/nvfp4_gemv_wgmma.cuh (namespace gemv_wgmma).
constexpr int kRows = 128, kGroup = 128, kChunk = kGemvWgmmaChunk, kThreads = 288;

// A stage (StageLayout<tokens>): A, 4 KB of B tiles and 128 bytes of B
// scales per token, A's scale codes.
int smem_bytes(int stages, int tokens) {
  return 512 + stages * (32768 + 4096 * tokens + 4096 + 128 * tokens);
}

// Chunks per item. A tile of up to four chunks is best taken whole (M 7168
// K 2048 L 4: 19.1 us, 21.7 at one or two chunks per item); longer rows go
// one chunk per item, which shortens the ragged end (H100, session 19: M
// 7168 K 16384 32.3 -> 31.3 us against two chunks, M 4096 K 7168 L 8 53.1
// -> 52.0, never slower on six shapes). Two chunks per item led before the
// cut tiles' partials were summed once at the end (session 10): each item
// then cost a fence and an atomic.
int seg_chunks_for(const GemvConfig& cfg, int chunks) {
  if (cfg.chunks_per_item) return std::min(cfg.chunks_per_item, chunks);
  return chunks <= 4 ? chunks : 1;
}

}  // namespace

int64_t gemv_wgmma_items(int64_t m, int64_t k, int64_t batches, const GemvConfig& cfg) {
  const int chunks = int((k + kChunk - 1) / kChunk);
  const int seg_chunks = seg_chunks_for(cfg, chunks);
  return (m + kRows - 1) / kRows * batches * ((chunks + seg_chunks - 1) / seg_chunks);
}

std::string gemv_wgmma_unmet_rule(const GemvProblem& p, const GemvConfig& cfg,
                                  const rt::DeviceInfo& dev) {
  if (!(dev.cc_major == 9 && dev.cc_minor == 0))
    return "config: the wgmma GEMV needs sm_90, this GPU is " + dev.arch();
  if (cfg.stages < 2 || cfg.stages > 5)
    return "config: stages must be 2..5, got " + std::to_string(cfg.stages);
  if (cfg.ctas_per_sm != 1 && cfg.ctas_per_sm != 2)
    return "config: ctas_per_sm must be 1 or 2, got " + std::to_string(cfg.ctas_per_sm);
  if (p.tokens < 1 || p.tokens > kGemvWgmmaMaxTokens)
    return "tokens: the wgmma GEMV takes 1.." + std::to_string(kGemvWgmmaMaxTokens) +
           " rows of b, got " + std::to_string(p.tokens);
  if (cfg.chunks_per_item < 0 || cfg.chunks_per_item > 128)
    return "config: chunks_per_item must be 0 (heuristic) or 1..128, got " +
           std::to_string(cfg.chunks_per_item);
  if (!check_aligned(p.a.values, 16, "a.values").ok() || shape3(p.a.values).row_stride % 16 != 0)
    return "a.values: the wgmma GEMV loads rows by TMA: base, row and batch strides must be "
           "multiples of 16 bytes";
  if (!check_aligned(p.b.values, 4, "b.values").ok())
    return "b.values: the wgmma GEMV reads B in 4-byte words: base, row and batch strides must be "
           "multiples of 4 bytes";
  if (p.a.layout == ScaleLayout::kBlocked) {
    if (!check_aligned(p.a.scales, 16, "a.scales").ok())
      return "a.scales: blocked scales must be 16-byte aligned for the wgmma GEMV";
  } else {
    if (p.k % 64 != 0) return "K: linear A scales need K % 64 == 0 for the wgmma GEMV";
    if (!check_aligned(p.a.scales, 4, "a.scales").ok())
      return "a.scales: linear scale rows must be 4-byte aligned for the wgmma GEMV";
  }
  const int64_t units = (p.m + kRows - 1) / kRows * p.batches * ((p.k + kChunk - 1) / kChunk);
  if (units > (int64_t(1) << 30))
    return "M * L * K: the wgmma GEMV numbers its " + std::to_string(units) +
           " (row tile, chunk) units and their claims with 31-bit counters";
  const int smem = smem_bytes(cfg.stages, int(p.tokens));
  if (smem > dev.max_smem_per_block_optin)
    return "config: " + cfg.describe() + " needs " + std::to_string(smem) +
           " bytes of shared memory, the GPU allows " +
           std::to_string(dev.max_smem_per_block_optin);
  return "";
}

Status launch_gemv_wgmma(const GemvProblem& pr, const GemvConfig& cfg, cudaStream_t stream) {
  const Nvfp4View &a = pr.a, &b = pr.b;
  const TensorView& c = pr.c;
  const bool a_blk = a.layout == ScaleLayout::kBlocked, b_blk = b.layout == ScaleLayout::kBlocked;

  CUtensorMap map_a;
  KESTREL_RETURN_IF_ERROR(
      rt::make_tma_map(a.values.data, byte_rows_spec(a.values, kChunk / 2, kRows), &map_a));
  // Linear A scales by TMA too (128 rows x 32 codes per chunk, laid out as
  // the cp.async path writes them) when base and strides are 16-byte aligned.
  CUtensorMap map_sfa = map_a;  // unused unless sfa_tma
  bool sfa_tma = false;
  if (!a_blk) {
    const rt::TmaMapSpec ss = byte_rows_spec(a.scales, kChunk / 16, kRows);
    sfa_tma = reinterpret_cast<uintptr_t>(a.scales.data) % 16 == 0 &&
              ss.strides_bytes[0] % 16 == 0 && ss.strides_bytes[1] % 16 == 0;
    if (sfa_tma) KESTREL_RETURN_IF_ERROR(rt::make_tma_map(a.scales.data, ss, &map_sfa));
  }

  WgmmaParams p{};
  p.o = gemv_operand_args(pr, 4096.0f);  // 2^12: two decodes of 2^-6
  const int tokens = int(pr.tokens);
  const int tiles_m = int((pr.m + kRows - 1) / kRows);
  const int chunks = int((pr.k + kChunk - 1) / kChunk);
  p.groups = int((pr.k + kGroup - 1) / kGroup);

  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get(gemv_wgmma_kernel_spec(c.dtype, cfg, a_blk, b_blk, tokens), &kernel));
  rt::LaunchShape shape;
  shape.block = dim3(kThreads);
  shape.smem_bytes = size_t(smem_bytes(cfg.stages, tokens));
  int resident = 0;
  KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape, &resident));
  if (resident < 1)
    return Status::InvalidArgument("config: " + cfg.describe() + " cannot run on this GPU");
  const int seg_chunks = seg_chunks_for(cfg, chunks);
  const int segs = (chunks + seg_chunks - 1) / seg_chunks;
  p.work = SplitKItems{tiles_m, chunks, seg_chunks, segs};
  p.items = int(gemv_wgmma_items(pr.m, pr.k, pr.batches, cfg));
  p.ctas = std::min(p.items, resident);
  shape.grid = dim3(unsigned(p.ctas));
  // Cut tiles are added once every CTA has run out of items: all CTAs must
  // be resident together.
  shape.cooperative = segs > 1;

  // The counters (left zero by every call), and for cut tiles one slot of
  // partial row sums per item and token.
  void* counters = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::stream_workspace(stream, 3 * sizeof(int), &counters));
  p.counters = static_cast<int*>(counters);
  if (segs > 1) {
    void* partial = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::stream_workspace(stream,
                                                 size_t(p.items) * tokens * kRows * sizeof(float),
                                                 &partial, rt::WorkspaceUse::kScratch));
    p.partial = static_cast<float*>(partial);
  }
  p.sfa_tma = sfa_tma ? 1 : 0;
  return kernel(shape, stream, map_a, map_sfa, p);
}

}  // namespace kestrel::ops
