// Lets a header be compiled by NVRTC (device code) and by the host compiler
// (CPU references, tests) from one source of truth.
#pragma once
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KESTREL_HD __host__ __device__ __forceinline__
#else
#define KESTREL_HD inline
#endif
