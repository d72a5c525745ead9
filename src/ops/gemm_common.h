// Pieces shared by the host sides of the NVFP4 GEMM and dual GEMM: operand
// validation, tile geometry, TMA maps, launch shape. Mirrors the constants of
// kernels/nvfp4_gemm.cuh.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "kestrel/gemm.h"
#include "kestrel/nvfp4.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel::ops {

constexpr int kGemmBlockM = 128;  // weight rows per CTA (two consumer warpgroups)
constexpr int kGemmBlockK = 128;  // K values per pipeline stage
constexpr int kGemmSmemLimit = 227 * 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Dynamic shared memory of one GEMM CTA of `consumers` consumer warpgroups
// (64 weight rows each a stage; the dual GEMM's are half W1's, half W2's;
// packed weights bring their scale codes, 512 bytes more per 64 rows).
int gemm_smem_bytes(int block_n, int stages, bool w_packed = false, int consumers = 2);
// A grouped launch's: the group table on top.
int grouped_gemm_smem_bytes(int block_n, int stages, bool w_packed, int consumers, int64_t groups);
int gemm_max_stages(int block_n, bool w_packed = false, int consumers = 2);
// The heuristic's pipeline depth: 4 stages at 32..128 tokens, except the
// unpacked weights of a K-tail launch; otherwise as deep as fits.
int gemm_default_stages(int block_n, bool k_tail, bool w_packed, int consumers = 2);

struct GemmShape {
  int64_t batches, m, n, k;
  int64_t c_batch, c_row;  // output strides (elements)
  // Grouped GEMM (groups > 0): batches = groups weights; A and C are one
  // batch of m rows, group g's ending at group_ends[g] (device memory).
  int64_t groups = 0;
  const int32_t* group_ends = nullptr;
};

// Most groups of a grouped GEMM: each CTA keeps a table of 8 bytes a group
// in shared memory.
constexpr int64_t kGemmMaxGroups = 1024;

// a: activations, b: weights, c: output. Checks formats, shapes, alignment.
Status validate_gemm(const Nvfp4View& a, const Nvfp4View& b, const TensorView& c,
                     const char* c_name, GemmShape* out);
// The grouped GEMM's operands: a one [M][K] batch, b [groups][N][K], c [M][N],
// group_ends a device array of `groups` int32.
Status validate_grouped_gemm(const Nvfp4View& a, const Nvfp4View& b, const int32_t* group_ends,
                             int64_t groups, const TensorView& c, const char* c_name,
                             GemmShape* out);
// The dual GEMM's second weight against its first (both validated): the
// same N and scale layout.
Status check_second_weight(const Nvfp4View& b1, const Nvfp4View& b2);
// The configuration's own rules (and three consumer warpgroups: a dual GEMM
// without a K split or tail).
Status check_gemm_config(const GemmConfig& cfg, bool dual, const rt::DeviceInfo* dev,
                         bool w_packed = false);

// Rows per batch of the pre-passed activations: M rounded up to whole token
// tiles (the rows past M are zero); grouped, a tile more (a group's tiles
// start at its first row).
int64_t activation_rows(const GemmShape& s, int block_n);
// The TMA map of the pre-passed fp16 activations.
Status make_activation_map(const void* x16, const GemmShape& s, int block_n, CUtensorMap* out);
// The TMA map of row-major weights, `box_rows` rows per load (the rows of
// a tile: 128; dual, its columns, 64 or 96).
Status make_weight_map(const Nvfp4View& b, int box_rows, CUtensorMap* out);
// The TMA map that stores C (64 columns x block_n tokens per store);
// fails where C's base or strides are not 16-byte aligned.
Status make_output_map(const TensorView& c, const GemmShape& s, int block_n, CUtensorMap* out);

// The smallest tile of gemm_block_n_choices() that holds `rows` tokens (the
// largest, 256, past it).
int gemm_block_n_holding(int64_t rows);
// Output columns (weight rows) per tile: 128, dual 32 x consumer_groups.
int gemm_tile_columns(const GemmConfig& cfg, bool dual);
// Output tiles of a launch (dual: the SwiGLU variant), of M tokens x N
// columns over `batches`.
int64_t gemm_tiles(int64_t m, int64_t n, int64_t batches, const GemmConfig& cfg, bool dual);
// Grouped: the most tiles any split of the rows into its groups can take
// (the kernel counts them from group_ends).
int64_t gemm_tiles(const GemmShape& s, const GemmConfig& cfg, bool dual);

// A K tail (GemmConfig::k_tail): its last `stages` of every tile go to
// `ctas` CTAs after the tiles x split_k; none where no SM is left idle or K
// has fewer than split_k + 1 stages.
struct GemmKTail {
  int stages = 0, ctas = 0;
  // Stages the longest-running CTA takes, the tail's or a split share's.
  int64_t longest = 0;
};
GemmKTail gemm_k_tail(int64_t tiles, int split_k, int64_t k_stages, int sm_count);
// The K tail a launch with this configuration takes: none unless cfg.k_tail.
GemmKTail gemm_config_k_tail(const GemmShape& s, const GemmConfig& cfg, int sm_count, bool dual);

// Without a K split or tail the CTAs are persistent, one per SM at most; a
// cluster split is a CTA per tile and rank (token tiles in grid.y); parts
// meeting in L2 are a 1-D grid, tiles x split_k CTAs and the tail's after.
rt::LaunchShape gemm_launch_shape(const GemmShape& s, const GemmConfig& cfg, int sm_count,
                                  bool dual = false, bool w_packed = false);

// A cluster split holds the token tiles in grid.y (at most 65535), other
// launches their CTAs in grid.x; a K tail needs one (cfg.k_tail).
Status check_gemm_launch(const GemmShape& s, const GemmConfig& cfg, const rt::LaunchShape& ls,
                         int sm_count, bool dual);

// The configuration a launch runs: a given one as it is; else the tuning
// table's entry for this GPU and exact shape as it was timed; else the shape
// heuristic's, with its stages capped to what fits beside packed weights,
// and its split halved until the split-K clusters all fit on the GPU at
// once (else a second wave runs as long as the first: clusters of 4 or 8
// CTAs must sit in one GPC, 30 x 4 of an H100's 132 SMs), or down to 1.
// Each is checked against the kernel's limits.
Status resolve_gemm_config(const GemmConfig* given, const GemmConfig& heuristic,
                           const GemmShape& shape, DType out, bool w_blocked, bool dual,
                           bool w_packed, GemmConfig* cfg);

// Pre-passes A and launches kernels/nvfp4_gemm.cuh: the plain GEMM of b, or
// with b2 the SwiGLU dual GEMM silu(A b^T) * (A b2^T). Arguments validated.
// w_packed: b (and b2) are packed_weight_view()s of packed weights.
Status launch_nvfp4_gemm(const Nvfp4View& a, const Nvfp4View& b, const Nvfp4View* b2, bool w_packed,
                         const TensorView& c, const GemmShape& shape, const GemmConfig& cfg,
                         cudaStream_t stream);

}  // namespace kestrel::ops
