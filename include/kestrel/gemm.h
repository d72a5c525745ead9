// NVFP4 GEMM on Hopper tensor cores:
//   C[l][m][n] = a.global_scale * b.global_scale * sum_k A[l][m][k] * B[l][n][k]
// A: activations (M x K), B: weights (N x K), both NVFP4 (K-major).
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kestrel/nvfp4.h"

namespace kestrel {

// One point of the GEMM kernel's configuration space.
struct GemmConfig {
  int block_n = 128;  // tokens (rows of A) per CTA tile: 8..256, one of gemm_block_n_choices()
  int stages = 4;     // shared-memory pipeline depth
  int split_k = 1;    // CTAs splitting K: 1, 2, 4 or 8
  // split_k > 1: the CTAs of a tile add their accumulators through L2 (the
  // last to arrive stores) instead of forming a cluster that adds them over
  // DSMEM; no co-scheduling, so every split fits in one wave.
  bool split_l2 = false;
  // The SMs the tiles x split_k CTAs leave idle take the last K stages of
  // every tile (a few tiles each; the tile's parts meet in L2 as with
  // split_l2): seed 1's 56 tiles x 2 CTAs leave 20 of 132 SMs idle. Needs
  // tiles x split_k under the SM count.
  bool k_tail = false;
  // Consumer warpgroups per CTA, 64 weight rows each: 2, or 3 for the dual
  // GEMM without a K split or tail (tiles of 96 output columns instead of
  // 64: dual M512 N3072 runs 32 x 4 tiles of 128 tokens on 128 SMs where
  // 48 x 2 tiles of 256 tokens left 36 SMs idle).
  int consumer_groups = 2;

  // Whether a tile's parts meet in L2 (split_l2 means nothing without a split).
  bool partials_through_l2() const { return (split_l2 && split_k > 1) || k_tail; }

  // "bn128 s4 k1", "bn128 s4 k4 l2", "bn128 s5 k2 tail", "bn128 s4 k1 c3"
  std::string describe() const;
};

const std::vector<int>& gemm_block_n_choices();
// dual: with the dual GEMM's own configurations (consumer_groups 3).
std::vector<GemmConfig> gemm_config_space(bool dual = false);
GemmConfig gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches, int sm_count);

// a: L x M x K NVFP4 (activations); b: L x N x K NVFP4 (weights, rows 16-byte
// aligned, scales at even addresses: base and batch stride); c: fp16 or bf16
// [L][M][N] (or [M][N] when L = 1), any row stride.
// K: a multiple of 64. Without `config` and with row-major weights, M = 1
// runs gemv_nvfp4, and M = 2..16 its register kernel for all tokens at once
// (from 32 Mi weight values not at M = 4, and at M = 3 with the weights'
// rows 16-byte aligned only; M = 5..8 on rows of K >= 8192 or below 48 Mi
// weight values, M = 9..16 below 8 Mi, after the activation pre-pass below)
// where it runs without a cluster split, else the GEMM kernel.
// Otherwise runs a small pre-pass that expands A to fp16 in a stream-ordered
// scratch allocation (cudaMallocAsync on `stream`). Without `config`: the tuning
// table's entry for this GPU and exact shape (the shipped tables, under the
// file $KESTREL_TUNING_TABLE names, written by `kestrel tune gemm ... --save`;
// "none": no table), else the heuristic's.
Status gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                  cudaStream_t stream, const GemmConfig* config = nullptr);

// The SwiGLU up-projection, fused: C = silu(A B1^T) * (A B2^T), each product
// scaled by its global scales, fp32 epilogue. b1 and b2: L x N x K NVFP4 with
// the same scale layout; c as for gemm_nvfp4. One activation tile feeds both.
// `config` applies as for gemm_nvfp4 (a tile is 64 columns of C instead of
// 128, or 96 with consumer_groups 3, which the heuristic takes where its
// tiles fill the GPU in fewer or shorter waves).
Status dual_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2,
                       const TensorView& c, cudaStream_t stream,
                       const GemmConfig* config = nullptr);
GemmConfig dual_gemm_default_config(int64_t m, int64_t n, int64_t k, int64_t batches,
                                    int sm_count);

// Optional weight prepack for the two GEMMs above. pack_gemm_weights
// rearranges w once so that each stage of 64 rows x 128 K values, with its
// e4m3 scale codes, is 4608 contiguous bytes (one bulk copy instead of 64
// row pieces and the kernel's global scale loads) and the FP4 decode takes
// 9 integer ops per 8 values instead of 11. The packed buffer holds values
// and scales; w is not needed afterwards. Measured on the H100 (BENCHMARKS.md,
// session 16): M = 16..256 products 5-13% faster (M128 N7168 K16384 54.9 ->
// 50.0 us, M16 N = K = 8192 24.7 -> 21.5), M >= 512 1-2%; M = 1 slower than
// the row-major GEMV (21.7 vs 20.2 us at N = K = 8192), so decode-only weights
// are best left row-major.
struct GemmPackedWeights {
  const void* values = nullptr;  // gemm_packed_weight_bytes(n, k, batches) bytes
  int64_t batches = 0, n = 0, k = 0;
  float global_scale = 1.0f;
};
// Bytes of L x N x K packed weights (N rounded up to 128 and K to 128
// values; the padding is zero).
int64_t gemm_packed_weight_bytes(int64_t n, int64_t k, int64_t batches);
// w: as gemm_nvfp4's b. out: device memory of at least
// gemm_packed_weight_bytes(...) bytes, 16-byte aligned. Stream-ordered; on
// success *packed describes the result.
Status pack_gemm_weights(const Nvfp4View& w, void* out, int64_t out_bytes, cudaStream_t stream,
                         GemmPackedWeights* packed);
// The GEMMs on packed weights: same results as on the weights they came from
// (bit for bit). M = 1 runs the GEMM kernel too (the GEMV reads row-major A).
Status gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b, const TensorView& c,
                  cudaStream_t stream, const GemmConfig* config = nullptr);
Status dual_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b1, const GemmPackedWeights& b2,
                       const TensorView& c, cudaStream_t stream,
                       const GemmConfig* config = nullptr);

// Grouped GEMM (mixture-of-experts layers): the rows of A are the tokens of
// `count` groups one after another, group g's rows [ends[g - 1], ends[g])
// (ends[-1] = 0), and each group is multiplied by its own weight:
//   C[r][n] = a.global_scale * b.global_scale * sum_k A[r][k] * B[g][n][k]
// for r in group g. ends: int32 in memory the GPU can read (device, managed
// or page-locked host; pageable host memory is refused), non-decreasing, at
// most M; read by the kernel (no host synchronization), which takes each
// end as the running maximum clamped to [0, M], so bad ends read and write
// nothing out of bounds. Rows of C past the last end are not written.
struct GemmGroups {
  const int32_t* ends = nullptr;  // GPU-readable memory, `count` entries
  int64_t count = 0;              // 1..1024
};

// a: one M x K NVFP4 matrix; b: groups x N x K (weights, as gemm_nvfp4's b);
// c: fp16 or bf16 [M][N]. `config`: split_k 1, no k_tail, consumer_groups 2;
// without it grouped_gemm_default_config's. One launch for all groups
// (plus the activation pre-pass), persistent CTAs over every group's tiles.
Status grouped_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b, const GemmGroups& groups,
                          const TensorView& c, cudaStream_t stream,
                          const GemmConfig* config = nullptr);
Status grouped_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b, const GemmGroups& groups,
                          const TensorView& c, cudaStream_t stream,
                          const GemmConfig* config = nullptr);
// The SwiGLU up-projection per group: C = silu(A B1[g]^T) * (A B2[g]^T).
Status grouped_dual_gemm_nvfp4(const Nvfp4View& a, const Nvfp4View& b1, const Nvfp4View& b2,
                               const GemmGroups& groups, const TensorView& c, cudaStream_t stream,
                               const GemmConfig* config = nullptr);
Status grouped_dual_gemm_nvfp4(const Nvfp4View& a, const GemmPackedWeights& b1,
                               const GemmPackedWeights& b2, const GemmGroups& groups,
                               const TensorView& c, cudaStream_t stream,
                               const GemmConfig* config = nullptr);
// M rows over `groups` groups: token tiles that hold the mean group, at
// most 128 (the host does not know the groups' sizes, and N, K and the
// GPU do not change the pick: BENCHMARKS.md, session 41).
GemmConfig grouped_gemm_default_config(int64_t m, int64_t groups);

}  // namespace kestrel
