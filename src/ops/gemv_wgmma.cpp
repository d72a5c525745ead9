// Host side of the wgmma GEMV (kernels/nvfp4_gemv_wgmma.cuh): the rules its
// TMA loads need, the stream-K split over the SMs, and the workspace for
// tiles cut between CTAs.
#include <algorithm>
#include <string>

#include "ops/gemv_launch.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/validate.h"
#include "runtime/launcher.h"
#include "runtime/scratch.h"
#include "runtime/tma.h"

namespace kestrel::ops {
namespace {

struct WgmmaParams {  // mirrors kestrel::GemvWgmmaParams in kernels/nvfp4_gemv_wgmma.cuh
  GemvOperandArgs o;
  int* arrivals;
  float* partial;
  long long units;
  int tiles_m, groups, chunks, ctas;
};

// The constants of kernels/nvfp4_gemv_wgmma.cuh (namespace gemv_wgmma).
constexpr int kRows = 128, kGroup = 128, kChunk = 512, kThreads = 288, kMaxCtas = 2048;
constexpr int kStageBytes = 32768 + 4096 + 4096 + 128;

int smem_bytes(int stages, int64_t k) {
  return int(128 + stages * kStageBytes + (k / 2 + 15) / 16 * 16 + (k / 16 + 15) / 16 * 16);
}

}  // namespace

std::string gemv_wgmma_unmet_rule(const GemvProblem& p, const GemvConfig& cfg,
                                  const rt::DeviceInfo& dev) {
  if (!(dev.cc_major == 9 && dev.cc_minor == 0))
    return "config: the wgmma GEMV needs sm_90, this GPU is " + dev.arch();
  if (cfg.stages < 2 || cfg.stages > 5)
    return "config: stages must be 2..5, got " + std::to_string(cfg.stages);
  if (cfg.ctas_per_sm != 1 && cfg.ctas_per_sm != 2)
    return "config: ctas_per_sm must be 1 or 2, got " + std::to_string(cfg.ctas_per_sm);
  if (!check_aligned(p.a.values, 16, "a.values").ok() || shape3(p.a.values).row_stride % 16 != 0)
    return "a.values: the wgmma GEMV loads rows by TMA: base, row and batch strides must be "
           "multiples of 16 bytes";
  if (p.a.layout == ScaleLayout::kBlocked) {
    if (!check_aligned(p.a.scales, 16, "a.scales").ok())
      return "a.scales: blocked scales must be 16-byte aligned for the wgmma GEMV";
  } else {
    if (p.k % 64 != 0) return "K: linear A scales need K % 64 == 0 for the wgmma GEMV";
    if (!check_aligned(p.a.scales, 4, "a.scales").ok())
      return "a.scales: linear scale rows must be 4-byte aligned for the wgmma GEMV";
  }
  const int smem = smem_bytes(cfg.stages, p.k);
  if (smem > dev.max_smem_per_block_optin)
    return "config: " + cfg.describe() + " needs " + std::to_string(smem) +
           " bytes of shared memory at this K, the GPU allows " +
           std::to_string(dev.max_smem_per_block_optin);
  return "";
}

Status launch_gemv_wgmma(const GemvProblem& pr, const GemvConfig& cfg, cudaStream_t stream) {
  const Nvfp4View &a = pr.a, &b = pr.b;
  const TensorView& c = pr.c;
  const Shape3 av = shape3(a.values);
  const bool a_blk = a.layout == ScaleLayout::kBlocked, b_blk = b.layout == ScaleLayout::kBlocked;

  rt::TmaMapSpec spec;
  spec.rank = 3;
  spec.dims[0] = uint64_t(pr.k / 2);
  spec.dims[1] = uint64_t(pr.m);
  spec.dims[2] = uint64_t(pr.batches);
  spec.strides_bytes[0] = uint64_t(av.row_stride);
  spec.strides_bytes[1] = uint64_t(pr.batches > 1 ? av.batch_stride : av.row_stride * pr.m);
  spec.box[0] = kChunk / 2;
  spec.box[1] = kRows;
  spec.box[2] = 1;
  CUtensorMap map_a;
  KESTREL_RETURN_IF_ERROR(rt::make_tma_map(a.values.data, spec, &map_a));

  WgmmaParams p{};
  p.o = gemv_operand_args(pr, 4096.0f);  // 2^12: two decodes of 2^-6
  p.tiles_m = int((pr.m + kRows - 1) / kRows);
  p.groups = int((pr.k + kGroup - 1) / kGroup);
  p.chunks = int((pr.k + kChunk - 1) / kChunk);
  p.units = (long long)p.tiles_m * pr.batches * p.chunks;

  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get(gemv_wgmma_kernel_spec(c.dtype, cfg, a_blk, b_blk), &kernel));
  rt::LaunchShape shape;
  shape.block = dim3(kThreads);
  shape.smem_bytes = size_t(smem_bytes(cfg.stages, pr.k));
  int resident = 0;
  KESTREL_RETURN_IF_ERROR(kernel.max_active_clusters(shape, &resident));
  if (resident < 1)
    return Status::InvalidArgument("config: " + cfg.describe() + " cannot run on this GPU");
  p.ctas = int(std::min<long long>({p.units, resident, kMaxCtas}));
  shape.grid = dim3(unsigned(p.ctas));

  // Tiles cut between CTAs leave partial sums, added by their last CTA. The
  // arrival counters sit at a fixed place for every grid size (each call
  // leaves them zero).
  void* ws = nullptr;
  constexpr size_t kArrivalBytes = size_t(kMaxCtas) * 2 * sizeof(int);
  KESTREL_RETURN_IF_ERROR(rt::stream_workspace(
      stream, kArrivalBytes + size_t(p.ctas) * 2 * kRows * sizeof(float), &ws));
  p.arrivals = static_cast<int*>(ws);
  p.partial = reinterpret_cast<float*>(static_cast<char*>(ws) + kArrivalBytes);
  return kernel(shape, stream, map_a, p);
}

}  // namespace kestrel::ops
