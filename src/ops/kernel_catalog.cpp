#include "ops/kernel_catalog.h"

#include <algorithm>
#include <set>
#include <string>

#include "ops/fp8_gemm_kernel.h"
#include "ops/gemm_common.h"
#include "ops/gemv_launch.h"
#include "ops/nvfp4_kernel_specs.h"
#include "ops/rowwise_config.h"
#include "ops/rowwise_plan.h"

namespace kestrel::ops {

namespace {

// Row-wise kernels: the heuristic's configurations for a short row (several
// rows per CTA) and the longest (a 16-CTA cluster) in every dtype, a one-row
// CTA in bf16, the misaligned paths (element-wise; shifted, which
// rmsnorm_bwd does not take), and the finishing kernels.
void append_rowwise_specs(std::vector<rt::KernelSpec>* specs) {
  const RowwiseOp ops[] = {RowwiseOp::kRmsNormFwd,      RowwiseOp::kRmsNormBwd,
                           RowwiseOp::kSoftmaxFwd,      RowwiseOp::kSoftmaxBwd,
                           RowwiseOp::kCrossEntropyFwd, RowwiseOp::kCrossEntropyBwd};
  auto add = [&](RowwiseOp op, DType t, int64_t n, RowAccess access, const RowVariant& v) {
    RowPlan plan;
    plan.cfg = default_config(op, 32768, n, t, 132, v.residual, access);
    plan.vpt = vectors_per_thread(plan.cfg, n, t);
    plan.access = access;
    specs->push_back(rowwise_kernel_spec(op, t, plan, v));
  };
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (RowwiseOp op : ops) {
      const RowVariant v{op == RowwiseOp::kRmsNormFwd, true, t};
      add(op, t, 1000, kRowVector, v);
      add(op, t, 262144, kRowVector, v);
      if (t == DType::kBF16) {
        add(op, t, 16384, kRowVector, v);
        add(op, t, 1001, kRowElementwise, {false, false, t});
        if (op != RowwiseOp::kRmsNormBwd) add(op, t, 1001 + 7, kRowShifted, v);
      }
    }
    specs->push_back(
        {"rmsnorm.cuh", std::string("kestrel::column_sum_kernel<") + cuda_type(t) + ">", {}});
  }
  add(RowwiseOp::kRmsNormFwd, DType::kBF16, 4096, kRowVector, {true, true, DType::kF32});
  // One vector a thread: the kernels that reread L2 (rmsnorm_bwd's without weight).
  add(RowwiseOp::kSoftmaxBwd, DType::kBF16, 4096, kRowVector, {});
  add(RowwiseOp::kRmsNormBwd, DType::kBF16, 4096, kRowVector, {false, false, DType::kBF16});
  specs->push_back({"cross_entropy.cuh", "kestrel::xent_finish_kernel", {}});
  specs->push_back({"cross_entropy.cuh", "kestrel::xent_count_kernel", {}});
}

}  // namespace

std::vector<rt::KernelSpec> default_kernel_specs() {
  std::vector<rt::KernelSpec> specs;
  for (const char* t : {"float", "__half", "__nv_bfloat16"}) {
    for (const char* blocked : {"false", "true"}) {
      const std::string args = std::string(t) + ", 4096, " + blocked + ">";
      specs.push_back({"nvfp4_quantize.cuh", "kestrel::quantize_kernel<" + args, {}});
      specs.push_back({"nvfp4_quantize.cuh", "kestrel::dequantize_kernel<" + args, {}});
    }
  }
  for (const char* dir : {"true", "false"})
    for (const char* vec : {"true", "false"})
      specs.push_back({"nvfp4_quantize.cuh",
                       std::string("kestrel::convert_scales_kernel<") + dir + ", " + vec + ">",
                       {}});
  // GEMV: every output type and scale-layout pair of both kernels at each
  // configuration the heuristic picks (4, 8 or 16 warps; clusters of 1 to 8
  // for few long rows; the ring at depth 2 or 4), plus the unaligned-row
  // path; the whole configuration space is in configuration_space_specs().
  std::vector<GemvConfig> regs;
  for (auto [m, k] : {std::pair<int64_t, int64_t>{65536, 4096},
                      {8192, 8192},
                      {4096, 14336},
                      {2048, 4096},
                      {1024, 4096},
                      {1024, 16384},
                      {128, 32768},
                      {64, 65536}}) {
    const GemvConfig c = gemv_default_config(m, k, 1, 132, GemvKernel::kRegister);
    if (std::none_of(regs.begin(), regs.end(),
                     [&](const GemvConfig& r) { return r.describe() == c.describe(); }))
      regs.push_back(c);
  }
  for (DType out : {DType::kF16, DType::kBF16}) {
    for (bool a_blk : {false, true})
      for (bool b_blk : {false, true}) {
        for (const GemvConfig& reg : regs)
          specs.push_back(gemv_kernel_spec(out, reg, a_blk, b_blk, true, true));
        specs.push_back(gemv_wgmma_kernel_spec(out, GemvConfig{}, a_blk, b_blk));
      }
  }
  // The register GEMV at several tokens (the GEMM at M = 2..16).
  for (const GemvConfig& reg : regs)
    for (int tokens : {2, 3, 4, 8, 16})
      if (reg.cluster == 1) {
        GemvConfig at_tokens = reg;
        at_tokens.depth = gemv_register_tokens_depth(reg.depth, tokens, reg.ring);
        const rt::KernelSpec spec =
            gemv_kernel_spec(DType::kF16, at_tokens, false, true, true, true, tokens);
        // Depths capped at several tokens meet: each kernel listed once.
        if (std::none_of(specs.begin(), specs.end(),
                         [&](const rt::KernelSpec& s) { return s.entry == spec.entry; }))
          specs.push_back(spec);
      }
  GemvConfig unaligned = gemv_default_config(7168, 16384, 1, 132, GemvKernel::kRegister);
  unaligned.row_tiles = 1;
  unaligned.warps = 4;
  unaligned.depth = 1;
  unaligned.ring = false;  // the ring copies whole 16-byte pieces
  specs.push_back(gemv_kernel_spec(DType::kF16, unaligned, false, false, false, false));
  // GEMM: the activation pre-pass and a spread of tile widths, both outputs,
  // both scale layouts, plain and dual.
  for (bool blk : {false, true})
    for (bool vec16 : {false, true})
      for (bool lane_major : {false, true})
        specs.push_back(act_prepass_kernel_spec(blk, vec16, lane_major));
  specs.push_back(gemm_kernel_spec(DType::kF16, {8, 8, 4}, false, false));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 2}, false, false));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {256, 3, 1}, true, false));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 1}, false, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {256, 3, 2}, true, true));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 5, 4, true}, false, false));
  // Packed weights: their pack kernel, plain and dual, with and without a split.
  for (bool blk : {false, true}) specs.push_back(weight_pack_kernel_spec(blk));
  specs.push_back(gemm_kernel_spec(DType::kF16, {8, 8, 1}, false, false, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {128, 5, 2, true}, true, false, true));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 2}, true, true, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {256, 3, 1}, false, true, true));
  // K tails (partials through L2 without a split, and with one): the seed
  // shapes' defaults on packed weights.
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 2, false, true}, false, false, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {256, 3, 1, false, true}, false, true, true));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 5, 1, false, true}, true, true, false));
  // Grouped: plain and dual, row-major and packed weights.
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 1}, false, false, false, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {64, 4, 1}, true, true, false, true));
  specs.push_back(gemm_kernel_spec(DType::kBF16, {128, 4, 1}, false, false, true, true));
  specs.push_back(gemm_kernel_spec(DType::kF16, {128, 4, 1}, false, true, true, true));
  // FP8 GEMM: with and without the add, wide and narrow tiles.
  specs.push_back(fp8_gemm_kernel_spec({192, 4, 8}, true));
  specs.push_back(fp8_gemm_kernel_spec({128, 6, 8}, false));
  specs.push_back(fp8_gemm_kernel_spec({64, 8, 8}, true));
  specs.push_back(fp8_gemm_kernel_spec({64, 13, 8, 1, 1}, true));
  append_rowwise_specs(&specs);
  for (const char* evict : {"false", "true"})
    specs.push_back(
        {"bench_read.cuh", std::string("kestrel::read_bytes_kernel<") + evict + ">", {}});
  // The bench's stream peer, every (reads, writes) the row-wise ops use.
  for (const char* rw : {"1, 0", "1, 1", "2, 1", "2, 2"})
    specs.push_back(
        {"bench_read.cuh", std::string("kestrel::stream_bytes_kernel<") + rw + ">", {}});
  for (const char* vec8 : {"true", "false"})
    specs.push_back(
        {"bench_silu_mul.cuh", std::string("kestrel::silu_mul_kernel<") + vec8 + ">", {}});
  return specs;
}

std::vector<rt::KernelSpec> configuration_space_specs() {
  std::vector<rt::KernelSpec> specs;
  for (const GemvConfig& c : gemv_config_space())
    specs.push_back(c.kernel == GemvKernel::kWgmma
                        ? gemv_wgmma_kernel_spec(DType::kF16, c, false, false)
                        : gemv_kernel_spec(DType::kF16, c, false, false, true, true));
  // Stages only size the ring: the deepest of each tile width covers the
  // code. (A K tail compiles the same with split_l2 on or off.)
  for (const GemmConfig& c : gemm_config_space(true)) {
    if (c.stages != gemm_max_stages(c.block_n, false, c.consumer_groups)) continue;
    for (bool dual : {false, true})
      if (dual || c.consumer_groups == 2)
        specs.push_back(gemm_kernel_spec(DType::kBF16, c, false, dual));
  }
  for (const Fp8GemmConfig& c : fp8_gemm_config_space())
    if (c.stages == fp8_gemm_max_stages(c.consumer_groups, c.block_n))
      for (bool has_r : {false, true}) specs.push_back(fp8_gemm_kernel_spec(c, has_r));
  // Run-time parameters (a GEMV's items, a raster, a tail split) share a
  // kernel: each is compiled once.
  std::vector<rt::KernelSpec> unique;
  std::set<std::string> seen;
  for (rt::KernelSpec& spec : specs) {
    std::string key = spec.describe();
    for (const std::string& o : spec.options) key += " " + o;
    if (seen.insert(key).second) unique.push_back(std::move(spec));
  }
  return unique;
}

}  // namespace kestrel::ops
