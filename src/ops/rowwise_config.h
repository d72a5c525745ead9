// The rules of the row-wise configuration space, shared by the public config
// functions (rowwise_config.cpp) and the launch plans (rowwise_plan.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/row_access.cuh"
#include "kestrel/rowwise.h"

namespace kestrel::ops {

constexpr int kMaxVectorsPerThread = 16;          // 64 registers of one row per thread
constexpr size_t kRowwiseSmemOptin = 227 * 1024;  // Hopper's per-block opt-in limit

inline int elements_per_vector(DType t) { return 16 / dtype_size(t); }
// Columns a thread slice must cover for rows of n elements: a shifted row
// spans up to one vector more.
inline int64_t held_row_length(int64_t n, DType t, RowAccess a) {
  return a == kRowShifted ? n + elements_per_vector(t) - 1 : n;
}
// 16-byte vectors each thread holds for rows of n elements.
int vectors_per_thread(const RowwiseConfig& c, int64_t n, DType t);
// Whether softmax_bwd holds y in registers and stages only dy: when staging
// both would leave room for a single CTA per SM.
bool softmax_bwd_y_in_registers(const RowwiseConfig& c, int vpt);
// Whether a backward kernel reads its two row inputs twice (from L2 the
// second time) and stages nothing (kernels/common/row_reread.cuh): softmax_bwd
// and rmsnorm_bwd without weight (`dweight` false), at one vector a thread
// and one row a thread, not over L2 groups.
bool rowwise_rereads(RowwiseOp op, const RowwiseConfig& c, int vpt, bool dweight);
// Dynamic shared memory of one CTA: the inputs of a backward pass staged by
// cp.async (both, but for softmax_bwd's y in registers), and rmsnorm_bwd's
// fp32 dweight accumulators when it has a weight (`dweight`).
size_t rowwise_smem_bytes(RowwiseOp op, const RowwiseConfig& c, int vpt, DType t, bool dweight);
// The heuristic (rowwise_default_config); `residual`: rmsnorm_fwd's fused
// residual form, which holds two inputs of each row in registers; `access`:
// how the rows move (the CTAs of 1024 threads are for aligned rows).
RowwiseConfig default_config(RowwiseOp op, int64_t m, int64_t n, DType dtype, int sm_count,
                             bool residual, RowAccess access);
// Empty when `c` can run `op` on rows of n elements, else the broken rule
// (rmsnorm_bwd: with dweight, so that a configuration runs either way).
std::string rowwise_config_error(RowwiseOp op, const RowwiseConfig& c, int64_t n, DType t,
                                 size_t max_smem);

}  // namespace kestrel::ops
