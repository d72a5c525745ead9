// The two NVFP4 GEMV kernels' host sides, behind gemv_nvfp4 (src/ops/gemv.cpp),
// which validates the operands and picks one.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kestrel/gemv.h"
#include "runtime/device.h"

namespace kestrel::ops {

// Validated operands: a [L][M][K], b [L][rows_b][K], c [L][M]; with several
// tokens rows 0..tokens-1 of b, and token j's outputs j * c_token elements
// after token 0's.
struct GemvProblem {
  const Nvfp4View& a;
  const Nvfp4View& b;
  const TensorView& c;
  int64_t batches, m, k;
  int64_t tokens = 1;
  int64_t c_token = 0;
};

// Mirrors kestrel::GemvOperands (kernels/common/nvfp4_gemv_operands.cuh).
struct GemvOperandArgs {
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
  long long b_token, sfb_token;
  long long c_token;
};
// decode_factor: what the kernel's A x B decode leaves to multiply back.
GemvOperandArgs gemv_operand_args(const GemvProblem& p, float decode_factor);

// Empty when kernels/nvfp4_gemv_wgmma.cuh can run the problem with `cfg`,
// else the rule that is not met ("a.values: ...").
std::string gemv_wgmma_unmet_rule(const GemvProblem& p, const GemvConfig& cfg,
                                  const rt::DeviceInfo& dev);
Status launch_gemv_wgmma(const GemvProblem& p, const GemvConfig& cfg, cudaStream_t stream);
// The most tokens (rows of b) each GEMV kernel takes in one launch.
constexpr int64_t kGemvWgmmaMaxTokens = 2;
constexpr int64_t kGemvMaxTokens = 16;       // the register kernel
constexpr int64_t kGemvMaxStagedTokens = 4;  // beyond: B from the pre-pass, tokens as mma columns
// The register kernel's TOKENS for `tokens` on rows of k values: column
// tiles of 8 from five, and from four on rows of K >= 8192, where four staged
// tokens hold too many registers for two groups in flight (H200, session 50,
// us, M4 on the GEMM kernel / M5 as a column tile: N8192 K8192 24.6 / 22.6,
// N4096 K14336 22.8 / 21.7, N2048 K8192 12.4 / 12.3; shorter rows 0.2-0.3
// faster staged).
inline int64_t gemv_register_kernel_tokens(int64_t tokens, int64_t k) {
  if (tokens == kGemvMaxStagedTokens && k >= 8192) return 8;
  return tokens <= kGemvMaxStagedTokens ? tokens : tokens <= 8 ? 8 : 16;
}
// The register kernel's depth (groups in flight per lane) at `tokens`, the
// most that fits 128 registers without spills (ptxas, session 49): four
// groups at one token, two at two, and at three through the ring only (its
// groups in flight hold no registers); one at four; two from five (tokens as
// columns: no per-token registers but the accumulators).
inline int gemv_register_tokens_depth(int depth, int64_t tokens, bool ring) {
  const int most = tokens == 1                                                             ? 4
                   : tokens == 2 || (tokens == 3 && ring) || tokens > kGemvMaxStagedTokens ? 2
                                                                                           : 1;
  return depth < most ? depth : most;
}
// Whether the register kernel's ring can copy a's rows (whole 16-byte pieces).
bool gemv_register_ring_fits(const GemvProblem& p);
// Several tokens (gemm_nvfp4 at M = 2..16): the register kernel (from 32 Mi
// values of a not at four tokens, and at three through the ring only).
// *ran is false (and the status Ok) where the operands break its rules: the
// caller runs the GEMM kernel instead.
Status launch_gemv_tokens(const GemvProblem& p, const rt::DeviceInfo& dev, cudaStream_t stream,
                          bool* ran);
// The work items (row tile x K segment of whole chunks of kGemvWgmmaChunk
// values) the wgmma kernel hands out for a shape.
constexpr int kGemvWgmmaChunk = 512;  // mirrors kernels/nvfp4_gemv_wgmma.cuh
int64_t gemv_wgmma_items(int64_t m, int64_t k, int64_t batches, const GemvConfig& cfg);

int gemv_register_smem_bytes(const GemvConfig& cfg, int64_t k, int64_t tokens = 1);
Status check_gemv_register_config(const GemvConfig& cfg, int64_t k, const rt::DeviceInfo& dev,
                                  int64_t tokens = 1);
// The cluster split whose CTAs do the least work in sequence: rounds (work
// items over the clusters of that split resident at once) times each CTA's
// share of the K groups; ties go to the smaller split. resident_by_cluster:
// (cluster, clusters resident at once) pairs. A split of 4 can take two
// rounds where one of 2 takes one (H200, session 49: M 512 K 32768 c4 13.6
// us, c2 11.1).
int gemv_pick_cluster(int64_t work, int64_t groups,
                      const std::vector<std::pair<int, int>>& resident_by_cluster);
// fit_cluster: cfg is the heuristic's, whose split may shrink to the one
// gemv_pick_cluster picks on this GPU.
Status launch_gemv_register(const GemvProblem& p, const GemvConfig& cfg, cudaStream_t stream,
                            bool fit_cluster = false);

}  // namespace kestrel::ops
