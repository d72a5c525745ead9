// The operands every NVFP4 GEMV kernel takes (A's values are passed apart:
// as a pointer or a TMA map): c[l][m] = alpha * sum_k A[l][m][k] * B[l][0][k],
// or for each of `tokens` rows j of B, c[l][j][m] (the GEMM at M = 2..4).
#pragma once
#include <cuda/std/cstdint>

namespace kestrel {

struct GemvOperands {
  const uint8_t* sfa;  // linear: [L][M][K/16] with strides; blocked: flat
  long long sfa_batch, sfa_row;
  const uint8_t* b;  // row 0 of [L][rows_b][K/2]
  long long b_batch;
  const uint8_t* sfb;  // linear: row 0 of [L][rows_b][K/16]; blocked: flat
  long long sfb_batch;
  void* c;  // [L][M] fp16 / bf16
  long long c_batch, c_row;
  int m, k, l, b_rows;
  float alpha;                   // global scales times the kernel's decode factor
  long long b_token, sfb_token;  // bytes between B's rows: values, linear scales
  long long c_token;             // elements between the tokens' outputs
};

}  // namespace kestrel
