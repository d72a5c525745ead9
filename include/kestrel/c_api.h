/* A C ABI over Kestrel's row-wise ops, for callers that cannot use the C++
 * API: Python through ctypes (scripts/torch_peers.py times Kestrel on torch's
 * own tensors with it), other languages' FFIs.
 *
 * Tensors are dense row-major [m][n] device buffers (row stride n); dtype
 * codes are kestrel::DType's: KESTREL_F32, KESTREL_F16, KESTREL_BF16. Optional
 * pointers may be NULL. `stream` is a cudaStream_t (NULL: the default stream).
 * Each call returns 0 on success; otherwise a nonzero kestrel::StatusCode and
 * kestrel_last_error() gives the message (per thread) naming the argument and
 * the rule. Semantics are those of include/kestrel/rowwise.h, heuristic
 * configurations. */
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KESTREL_F32 = 0, KESTREL_F16 = 1, KESTREL_BF16 = 2 };
enum { KESTREL_REDUCTION_NONE = 0, KESTREL_REDUCTION_SUM = 1, KESTREL_REDUCTION_MEAN = 2 };

const char* kestrel_last_error(void);

/* y = rmsnorm(h) * weight with h = x (+ residual, written to h when given);
 * weight [n] (may be NULL) has its own dtype; rstd [m] fp32 (may be NULL). */
int kestrel_rmsnorm_fwd(const void* x, const void* residual, const void* weight, int weight_dtype,
                        void* y, void* h, float* rstd, int64_t m, int64_t n, int dtype, float eps,
                        void* stream);
/* dweight [n] in dweight_dtype, exactly when weight is given. */
int kestrel_rmsnorm_bwd(const void* dy, const void* x, const void* weight, int weight_dtype,
                        const float* rstd, void* dx, void* dweight, int dweight_dtype, int64_t m,
                        int64_t n, int dtype, void* stream);
int kestrel_softmax_fwd(const void* x, void* y, int64_t m, int64_t n, int dtype, void* stream);
int kestrel_softmax_bwd(const void* dy, const void* y, void* dx, int64_t m, int64_t n, int dtype,
                        void* stream);
/* target [m] int64; loss [m] (reduction none) or [1] fp32; lse [m] fp32;
 * total_weight [1] fp32 or NULL (reduction mean). */
int kestrel_cross_entropy_fwd(const void* logits, const int64_t* target, float* loss, float* lse,
                              float* total_weight, int64_t m, int64_t v, int dtype,
                              int64_t ignore_index, float label_smoothing, int reduction,
                              void* stream);
int kestrel_cross_entropy_bwd(const float* dloss, const void* logits, const int64_t* target,
                              const float* lse, const float* total_weight, void* dlogits, int64_t m,
                              int64_t v, int dtype, int64_t ignore_index, float label_smoothing,
                              int reduction, void* stream);

#ifdef __cplusplus
}
#endif
