// Benchmark support: the SwiGLU tail a user runs after one bf16 GEMM on
// [B1; B2] (the dual GEMM's peer): out[r][c] = silu(h[r][c]) * h[r][n + c]
// for h of shape [rows][2n], in fp32, rounded once to bf16. One fused pass
// (what torch.compile makes of `F.silu(g) * u`), so the peer is not charged
// for eager PyTorch's extra round trip.
#pragma once
#include <cuda_bf16.h>

#include <cuda/std/cstdint>

namespace kestrel {

__device__ __forceinline__ float silu_times(float g, float u) {
  return g / (1.0f + __expf(-g)) * u;
}

// VEC8: n % 8 == 0, so every 8-column group is one 16-byte load of each half
// and one 16-byte store. Grid-stride over the groups (or single columns).
template <bool VEC8>
__global__ void __launch_bounds__(256)
    silu_mul_kernel(const __nv_bfloat16* __restrict__ h, __nv_bfloat16* __restrict__ out,
                    long long rows, long long n) {
  constexpr int kW = VEC8 ? 8 : 1;
  const long long groups_per_row = n / kW, total = rows * groups_per_row;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < total; i += 256ll * gridDim.x) {
    const long long r = i / groups_per_row, c = (i % groups_per_row) * kW;
    const __nv_bfloat16* g = h + r * 2 * n + c;
    if constexpr (VEC8) {
      const uint4 gv = *reinterpret_cast<const uint4*>(g);
      const uint4 uv = *reinterpret_cast<const uint4*>(g + n);
      const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&gv);
      const __nv_bfloat162* u2 = reinterpret_cast<const __nv_bfloat162*>(&uv);
      uint4 ov;
      __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&ov);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 gf = __bfloat1622float2(g2[j]), uf = __bfloat1622float2(u2[j]);
        o2[j] = __floats2bfloat162_rn(silu_times(gf.x, uf.x), silu_times(gf.y, uf.y));
      }
      *reinterpret_cast<uint4*>(out + r * n + c) = ov;
    } else {
      out[r * n + c] =
          __float2bfloat16_rn(silu_times(__bfloat162float(g[0]), __bfloat162float(g[n])));
    }
  }
}

}  // namespace kestrel
