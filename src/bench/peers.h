// Peers: what a user would run instead of a Kestrel op, timed in the same
// process on the same GPU. cuBLAS runs bf16 GEMM/GEMV on operands that were
// dequantized once beforehand (the fast Hopper path for NVFP4 weights, at 3.6x
// the memory); cuBLASLt runs e4m3 GEMMs; a device memcpy moving the same bytes
// is the peer of memory-bound ops, and a kernel that only reads them that of
// read-mostly ones. Library handles are created once per device
// and live for the process, so timings never include handle set-up.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "bench/timer.h"
#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel::bench {

struct PeerLaunch {
  std::string name;  // column title in reports: "cuBLAS bf16", "copy", ...
  Launchable call;
};

class Peers {
 public:
  // The handles of the current device (created on first use).
  static Status get(Peers** out);

  // Row-major C[b][M][N] = A[b][M][K] * B[b][N][K]^T; bf16 inputs, fp32
  // accumulation, C in `out` (kBF16 or kF16). batch > 1 runs strided batched
  // with dense strides.
  Status gemm_bf16(cudaStream_t stream, const void* a, const void* b, void* c, int64_t m, int64_t n,
                   int64_t k, int64_t batch = 1, DType out = DType::kBF16);
  // c[b][M] = A[b][M][K] * x[b][K]; bf16 inputs, fp32 accumulation, the shape
  // (m x 1) that cuBLAS dispatches to its GEMV kernels.
  Status gemv_bf16(cudaStream_t stream, const void* a, const void* x, void* c, int64_t m, int64_t k,
                   int64_t batch = 1, DType out = DType::kBF16);
  // Row-major D[M][N] = bf16(alpha * A[M][K] * B[N][K]^T + R[M][N]) with e4m3
  // A and B (cuBLASLt's required "TN" form), fp32 accumulation; without r
  // (null) no add. cuBLASLt's epilogue adds R (beta = 1) before its one
  // rounding to bf16.
  Status gemm_fp8(cudaStream_t stream, const void* a, const void* b, void* d, int64_t m, int64_t n,
                  int64_t k, float alpha = 1.0f, const void* r = nullptr);

  struct Impl;

 private:
  explicit Peers(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

// out[r][c] = bf16(silu(h[r][c]) * h[r][n + c]) for bf16 h of shape
// [rows][2n]: the SwiGLU tail after one GEMM on [B1; B2], fused into one
// pass (kernels/bench_silu_mul.cuh).
Status launch_silu_mul(cudaStream_t stream, const void* h, void* out, int64_t rows, int64_t n);

// The "copy" peer of a memory-bound op moving `bytes` in total (read + write):
// a device-to-device memcpy of bytes / 2, with `slots` rotating copies of its
// source and destination, allocated here and owned by the returned closure.
Status make_copy_peer(int64_t bytes, int slots, PeerLaunch* out);

// The "read" peer of a read-mostly op moving `bytes`: a kernel that reads that
// many bytes and does nothing else (launch included), with `slots` rotating
// zeroed buffers: the floor for a kernel that must read those bytes.
Status make_read_peer(int64_t bytes, int slots, PeerLaunch* out);

// The "stream" peer of a row-wise op: `reads` (1 or 2) input streams into
// `writes` (0 to 2) output streams of `stream_bytes` each, laid out as the
// row-wise kernels work, with no arithmetic (kernels/bench_read.cuh): the
// floor of the op's DRAM traffic. `slots` rotating sets, zeroed inputs.
Status make_stream_peer(int64_t stream_bytes, int reads, int writes, int slots, PeerLaunch* out);
// Its kernel: out[w][i] = xor over r of in[r][i] for n16 16-byte words per
// stream, the streams of `in` and `out` contiguous.
Status launch_stream_bytes(cudaStream_t stream, const void* in, void* out, int64_t n16, int reads,
                           int writes);

}  // namespace kestrel::bench
