// Benchmark support. read_bytes_kernel reads a buffer and nothing else, for:
// - the L2 flush before a timed call (EVICT): a read, unlike a memset, leaves
//   L2 holding clean lines, so the timed call does not pay for writing back
//   the flush's data. Its loads take the default L2 policy: the streaming
//   `ld.global.nc` loads of the read peer left earlier calls' dirty lines in
//   L2 across a 256 MiB read (H100, session 19: an rmsnorm_fwd bf16 32768 x
//   256 then wrote 8.4 MB back during the timed call, against 0.2 MB after
//   torch's flush, `flush.sum()`);
// - the "read" peer of read-mostly ops (the GEMV): what a kernel that only
//   reads the op's bytes takes, launch included, on the same GPU.
// stream_bytes_kernel is the "stream" peer of row-wise ops (below), and
// idle_kernel one thread that waits, so that a timed call can start on a GPU
// that has been idle for a while, as torch.cuda._sleep lets PyTorch's.
#pragma once
#include <cuda/std/cstdint>

#include "common/ptx.cuh"

namespace kestrel {

template <bool EVICT>
__device__ __forceinline__ uint4 read_v4(const uint4* p) {
  return EVICT ? ptx::ld_global_v4(p) : ptx::ld_stream_v4(p);
}

// Grid-stride over n16 16-byte words, four loads in flight per thread.
template <bool EVICT>
__global__ void __launch_bounds__(512) read_bytes_kernel(const uint4* __restrict__ p,
                                                         unsigned long long n16,
                                                         unsigned* __restrict__ sink) {
  const unsigned long long stride = 512ull * gridDim.x;
  unsigned long long i = blockIdx.x * 512ull + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = read_v4<EVICT>(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = read_v4<EVICT>(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // the buffers are zero: never taken, keeps the loads
}

// The "stream" peer of row-wise ops: R input streams into W output streams
// of n16 16-byte words each (out_w = xor of the inputs; with W = 0, `out`
// holds n16 words of scratch, written only where a chunk's xor hits a magic
// value, never for the peer's zeroed inputs), the op's DRAM
// traffic with no arithmetic, laid out as the row-wise kernels work: one CTA
// per 64 KiB chunk of each stream (its "row"), loads with L2 evict_last, and
// the whole chunk loaded before any store, as a row reduction does. Of ~40
// layouts timed on the H100 (session 26) this one was never more than 1%
// from the best; persistent grids ran 3% slower.
constexpr int kStreamThreads = 512, kStreamWords = 8;  // 16-byte words per thread per stream
template <int R, int W>
__global__ void __launch_bounds__(kStreamThreads)
    stream_bytes_kernel(const uint4* __restrict__ in, uint4* __restrict__ out,
                        unsigned long long n16) {
  const unsigned long long first =
      blockIdx.x * (1ull * kStreamWords * kStreamThreads) + threadIdx.x;
  const uint64_t policy = ptx::l2_evict_last();
  uint4 v[kStreamWords];
#pragma unroll
  for (int u = 0; u < kStreamWords; ++u) v[u] = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < kStreamWords; ++u) {
      const unsigned long long i = first + u * kStreamThreads;
      if (i < n16) {
        const uint4 x = ptx::ld_hint_v4(in + r * n16 + i, policy);
        v[u] = make_uint4(v[u].x ^ x.x, v[u].y ^ x.y, v[u].z ^ x.z, v[u].w ^ x.w);
      }
    }
  __syncthreads();
  if (W == 0) {  // ptxas drops loads whose values are unused: fold them into a store never taken
    uint32_t acc = 0;
#pragma unroll
    for (int u = 0; u < kStreamWords; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    if (acc == 0x9e3779b9u && first < n16) out[first] = v[0];
  }
#pragma unroll
  for (int w = 0; w < W; ++w)
#pragma unroll
    for (int u = 0; u < kStreamWords; ++u) {
      const unsigned long long i = first + u * kStreamThreads;
      if (i < n16) ptx::st_global_v4(out + w * n16 + i, v[u]);
    }
}

// Returns once `ns` nanoseconds of %globaltimer have passed (not SM cycles:
// the wait must not depend on the clock it may let change).
__global__ void idle_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace kestrel
