// Benchmark support: reads a buffer and nothing else. Two uses:
// - the L2 flush before a timed call (EVICT): a read, unlike a memset, leaves
//   L2 holding clean lines, so the timed call does not pay for writing back
//   the flush's data. Its loads take the default L2 policy: the streaming
//   `ld.global.nc` loads of the read peer left earlier calls' dirty lines in
//   L2 across a 256 MiB read (H100, session 19: an rmsnorm_fwd bf16 32768 x
//   256 then wrote 8.4 MB back during the timed call, against 0.2 MB after
//   torch's flush, `flush.sum()`);
// - the "read" peer of read-mostly ops (the GEMV): what a kernel that only
//   reads the op's bytes takes, launch included, on the same GPU.
// And idle_kernel: one thread that waits, so that a timed call can start on a
// GPU that has been idle for a while, as torch.cuda._sleep lets PyTorch's.
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
