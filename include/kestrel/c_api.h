/* A C ABI over Kestrel, for callers that cannot use the C++ API: Python
 * through ctypes (scripts/torch_peers.py times Kestrel on torch's own tensors
 * with it), other languages' FFIs. The row-wise ops, NVFP4 quantization,
 * the NVFP4 GEMMs and the FP8 GEMM + add.
 *
 * Tensors are dense row-major device buffers; dtype codes are
 * kestrel::DType's: KESTREL_F32, KESTREL_F16, KESTREL_BF16. Optional pointers
 * may be NULL. `stream` is a cudaStream_t (NULL: the default stream). Each
 * call returns 0 on success; otherwise a nonzero kestrel::StatusCode and
 * kestrel_last_error() gives the message (per thread) naming the argument and
 * the rule. Semantics are those of include/kestrel/rowwise.h, nvfp4.h,
 * gemm.h and fp8_gemm.h, with the configurations the library picks (tuning
 * table, else heuristic); so are their workspaces (inside CUDA-graph capture
 * a call on a stream whose workspace must first grow returns nonzero: make
 * one call on the stream before capturing). */
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

/* ---- NVFP4 ---- */

enum { KESTREL_SCALES_LINEAR = 0, KESTREL_SCALES_BLOCKED = 1 };

/* An NVFP4 tensor of batches x rows x k values (k a multiple of 16), dense:
 * values [batches][rows][k/2] bytes, two e2m1 codes a byte (element 2j in
 * the low nibble); scales e4m3, KESTREL_SCALES_LINEAR [batches][rows][k/16]
 * bytes or KESTREL_SCALES_BLOCKED (the cuBLAS "128x4" layout, rows padded to
 * 128 and k/16 to 4: kestrel_blocked_scale_bytes bytes); the value is
 * e2m1 * scale * global_scale. */
typedef struct kestrel_nvfp4 {
  void* values;
  void* scales;
  int64_t batches, rows, k;
  int scale_layout;
  float global_scale;
} kestrel_nvfp4;

int64_t kestrel_blocked_scale_bytes(int64_t rows, int64_t k, int64_t batches);

/* x [batches][rows][k] in dtype -> t's values and scales; t->global_scale is
 * an input (nvfp4.h: scale = e4m3(amax16 / 6 / global_scale)). */
int kestrel_quantize_nvfp4(const void* x, int dtype, const kestrel_nvfp4* t, void* stream);
/* t -> y [batches][rows][k] in dtype. */
int kestrel_dequantize_nvfp4(const kestrel_nvfp4* t, void* y, int dtype, void* stream);

/* c [batches][m][n] (out_dtype KESTREL_F16 or KESTREL_BF16) = a.global_scale
 * * b.global_scale * a (batches x m x k, activations) times b (batches x n x k,
 * weights) transposed. m = 1 runs the GEMV kernel. */
int kestrel_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b, void* c, int out_dtype,
                       void* stream);
/* The fused SwiGLU up-projection: c = silu(a b1^T) * (a b2^T), b1 and b2
 * batches x n x k with one scale layout. */
int kestrel_dual_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b1,
                            const kestrel_nvfp4* b2, void* c, int out_dtype, void* stream);

/* Weights packed once for the GEMMs (gemm.h, pack_gemm_weights): `out` holds
 * at least kestrel_gemm_packed_weight_bytes(n, k, batches) bytes, 16-byte
 * aligned; w is not needed afterwards. */
int64_t kestrel_gemm_packed_weight_bytes(int64_t n, int64_t k, int64_t batches);
int kestrel_pack_gemm_weights(const kestrel_nvfp4* w, void* out, int64_t out_bytes, void* stream);
/* The GEMMs on packed weights of n rows (the batches and k are a's), with
 * the global scale of the weights they were packed from. Bit for bit the
 * results on those weights. */
int kestrel_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b, float b_global_scale,
                              int64_t n, void* c, int out_dtype, void* stream);
int kestrel_dual_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b1, float b1_global_scale,
                                   const void* b2, float b2_global_scale, int64_t n, void* c,
                                   int out_dtype, void* stream);

/* Grouped GEMM (mixture-of-experts; gemm.h, grouped_gemm_nvfp4): a is one
 * m x k matrix (a->batches 1) of the groups' rows one after another, b one
 * weight per group (b->batches = groups, n x k each), c [m][n]; ends: device
 * int32[groups], group g's rows [ends[g - 1], ends[g]). With b2 (same shape
 * and scale layout as b) the SwiGLU dual c = silu(a b^T) * (a b2^T); b2 NULL:
 * the plain product. */
int kestrel_grouped_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b,
                               const kestrel_nvfp4* b2, const int32_t* ends, int64_t groups,
                               void* c, int out_dtype, void* stream);
/* The same on weights packed by kestrel_pack_gemm_weights (groups batches of
 * n rows), with the global scales of the weights they came from; b2 NULL:
 * the plain product. */
int kestrel_grouped_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b, float b_global_scale,
                                      const void* b2, float b2_global_scale, int64_t n,
                                      const int32_t* ends, int64_t groups, void* c, int out_dtype,
                                      void* stream);

/* FP8 GEMM with a fused add (fp8_gemm.h, fp8_gemm_add): d[l][m][n] =
 * bf16(bf16(alpha * sum_k a[l][m][k] b[l][n][k]) + r[l][m][n]); a and b dense
 * e4m3 (float8_e4m3fn) [batches][m][k] and [batches][n][k] with k a multiple
 * of 16, r and d dense bf16 [batches][m][n] with n a multiple of 8. r NULL:
 * no add; r == d: an in-place residual add. */
int kestrel_fp8_gemm_add(const void* a, const void* b, float alpha, const void* r, void* d,
                         int64_t batches, int64_t m, int64_t n, int64_t k, void* stream);
/* The same with alpha = *scale_a * *scale_b, fp32 scales in memory the GPU
 * can read, read when the kernel runs (torch._scaled_mm's scale tensors; a
 * captured graph replays with their values then); NULL reads as 1. */
int kestrel_fp8_gemm_add_scaled(const void* a, const void* b, const float* scale_a,
                                const float* scale_b, const void* r, void* d, int64_t batches,
                                int64_t m, int64_t n, int64_t k, void* stream);

#ifdef __cplusplus
}
#endif
