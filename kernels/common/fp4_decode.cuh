// e2m1 -> fp16 by bit placement, 8 values (one 32-bit word) at a time.
//
// An e2m1 nibble s|e1 e0 m0 whose magnitude bits land in fp16 bits 11..9 and
// whose sign lands in bit 15 is exactly the fp16 number e2m1 * 2^-14 (normal
// and subnormal codes alike). Splitting the word into even and odd nibbles
// first (E, O: each nibble alone in its byte) lets one shift pair and one
// LOP3 place two values, 16 bits apart, with no neighbour leaking into the
// mask: 1.6 integer ops per value.
//
// Output pairs (lo, hi half) are value indices (0,4), (2,6), (1,5), (3,7) of
// the word: a permutation of K that every consumer applies to the other
// operand too (a dot product does not care about the order of K).
#pragma once
#include "common/host_device.cuh"
#if defined(__CUDACC_RTC__)
#include <cuda/std/cstdint>
#else
#include <cstdint>
#endif

namespace kestrel {

constexpr float kFp4DecodeScale = 16384.0f;  // decoded fp16 = e2m1 / 2^14

// Value index within the word of half `lo_or_hi` (0/1) of output pair q.
KESTREL_HD constexpr int fp4_pair_index(int q, int lo_or_hi) {
  return (q == 0 ? 0 : q == 1 ? 2 : q == 2 ? 1 : 3) + 4 * lo_or_hi;
}

// even / odd: 0x0F0F0F0F and 0xF0F0F0F0, passed in so that a caller can
// hold them in registers ptxas cannot see into (the GEMM's NibbleMasks).
KESTREL_HD void decode_fp4x8(uint32_t w, uint32_t (&h)[4], uint32_t even = 0x0F0F0F0Fu,
                             uint32_t odd = 0xF0F0F0F0u) {
  constexpr uint32_t kMask = 0x8E008E00u;  // sign bit 15, magnitude bits 11..9, per half
  const uint32_t e = w & even, o = w & odd;
  h[0] = ((e << 9) | (e << 12)) & kMask;
  h[1] = ((e << 1) | (e << 4)) & kMask;
  h[2] = ((o << 5) | (o << 8)) & kMask;
  h[3] = ((o >> 3) | o) & kMask;
}

// e2m1 -> e4m3 by bit placement, for the fp8 tensor cores (wgmma). A nibble
// s|e1 e0 m0 with e1 e0 m0 in e4m3 bits 4..2 and s in bit 7 is exactly the
// e4m3 number e2m1 * 2^-6 (e1 e0 = 0 lands on the e4m3 subnormals). Byte j of
// `even` holds value 2j of the word, byte j of `odd` value 2j + 1: 7 integer
// ops per 8 values.
constexpr float kFp4E4m3Scale = 64.0f;  // decoded e4m3 = e2m1 / 2^6

KESTREL_HD void decode_fp4x8_e4m3(uint32_t w, uint32_t& even, uint32_t& odd) {
  even = ((w << 2) & 0x1C1C1C1Cu) | ((w << 4) & 0x80808080u);
  odd = ((w >> 2) & 0x1C1C1C1Cu) | (w & 0x80808080u);
}

}  // namespace kestrel
