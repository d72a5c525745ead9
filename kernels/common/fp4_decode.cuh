// e2m1 -> fp16 by bit placement, 8 values (one 32-bit word) at a time.
//
// An e2m1 nibble s|e1 e0 m0 whose magnitude bits land in fp16 bits 11..9 and
// whose sign lands in bit 15 is exactly the fp16 number e2m1 * 2^-14 (normal
// and subnormal codes alike). Splitting the word into even and odd nibbles
// first (E, O: each nibble alone in its byte) lets a shift pair and one LOP3
// build four such high bytes in place, with no neighbour leaking into the
// mask; PRMT then puts two of them, 16 bits apart, into each output.
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

// __byte_perm on the device, its definition on the host (the CPU tests).
KESTREL_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, selector);
#else
  const uint64_t xy = (uint64_t(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= uint32_t((xy >> (8 * ((selector >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

// Four high bytes each of te (values 0, 2, 4, 6) and to (1, 3, 5, 7) into
// the halves of the output pairs: PRMT moves bytes b and b + 2.
KESTREL_HD void spread_fp16_high_bytes(uint32_t te, uint32_t to, uint32_t (&h)[4]) {
  h[0] = byte_perm(te, 0, 0x2404);
  h[1] = byte_perm(te, 0, 0x3414);
  h[2] = byte_perm(to, 0, 0x2404);
  h[3] = byte_perm(to, 0, 0x3414);
}

constexpr uint32_t kFp16HighBytes = 0x8E8E8E8Eu;  // sign and magnitude bits of a high byte

// even / odd: 0x0F0F0F0F and 0xF0F0F0F0, passed in so that a caller can
// hold them in registers ptxas cannot see into (the GEMM's NibbleMasks).
// Each nibble's fp16 high byte (magnitude to bits 3..1, sign to bit 7) is
// built in place, four at a time: 11 integer ops per word.
KESTREL_HD void decode_fp4x8(uint32_t w, uint32_t (&h)[4], uint32_t even = 0x0F0F0F0Fu,
                             uint32_t odd = 0xF0F0F0F0u) {
  const uint32_t e = w & even, o = w & odd;
  const uint32_t te = ((e << 1) | (e << 4)) & kFp16HighBytes;  // values 0, 2, 4, 6
  const uint32_t to = ((o >> 3) | o) & kFp16HighBytes;         // values 1, 3, 5, 7
  spread_fp16_high_bytes(te, to, h);
}

// The GEMM's packed weight order (kernels/nvfp4_weight_pack.cuh) moves the
// bits of each byte (values 2j and 2j + 1 of the word) so that the even
// value already sits as an fp16 high byte: bit 7 its sign, bits 3..1 its
// magnitude; bits 6..4 hold the odd value's magnitude and bit 0 its sign.
// The decode then needs no nibble split: 9 integer ops per word, not 11.
KESTREL_HD uint32_t pack_fp4x8_bits(uint32_t w) {
  return ((w & 0x08080808u) << 4) | ((w & 0x07070707u) << 1) | (w & 0x70707070u) |
         ((w & 0x80808080u) >> 7);
}

// decode_fp4x8 of the word that pack_fp4x8_bits turned into p (the same
// output pairs).
KESTREL_HD void decode_packed_fp4x8(uint32_t p, uint32_t (&h)[4]) {
  const uint32_t te = p & kFp16HighBytes;
  const uint32_t to = ((p >> 3) & 0x0E0E0E0Eu) | ((p << 7) & 0x80808080u);
  spread_fp16_high_bytes(te, to, h);
}

// PRMT with its per-nibble sign flag (bit 3 of a selector nibble: the byte
// becomes its own bit 7 replicated), on the device and on the host.
KESTREL_HD uint32_t prmt_signed(uint32_t x, uint32_t y, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(selector));
  return r;
#else
  const uint64_t xy = (uint64_t(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (selector >> (4 * i)) & 0xF;
    uint32_t byte = uint32_t(xy >> (8 * (nib & 7))) & 0xFF;
    if (nib & 8) byte = (byte & 0x80) ? 0xFF : 0x00;
    r |= byte << (8 * i);
  }
  return r;
#endif
}

// e2m1 -> int8 (twice the value, exact) for the integer tensor cores, as two
// unsigned parts: pos holds the magnitudes of the word's positive values and
// 0 in the other bytes, neg those of its negative ones (value = pos - neg).
// PRMT looks a nibble's magnitude up in an 8-byte table; the nibble's sign
// bit is PRMT's sign flag, which turns every table byte (all below 0x80) into
// 0. So the lookup of the word gives pos, and of the word with its sign bits
// flipped gives neg: 7 integer ops per 8 values. Bytes 0-3 of pos[0] / neg[0]
// are values 0-3 of the word, of pos[1] / neg[1] values 4-7. table_lo: the
// table's first word, which a kernel holds in a register ptxas cannot see
// into (else ptxas copies the constant into a fresh register for each PRMT).
constexpr uint32_t kE2m1x2Lo = 0x03020100u, kE2m1x2Hi = 0x0C080604u;  // 2 * |e2m1| by code
constexpr float kFp4S8Scale = 0.5f;                                   // decoded int8 = 2 e2m1

KESTREL_HD void decode_fp4x8_s8(uint32_t w, uint32_t (&pos)[2], uint32_t (&neg)[2],
                                uint32_t table_lo = kE2m1x2Lo) {
  const uint32_t flip = w ^ 0x88888888u;
  pos[0] = prmt_signed(table_lo, kE2m1x2Hi, w);
  pos[1] = prmt_signed(table_lo, kE2m1x2Hi, w >> 16);
  neg[0] = prmt_signed(table_lo, kE2m1x2Hi, flip);
  neg[1] = prmt_signed(table_lo, kE2m1x2Hi, flip >> 16);
}

// The same values as signed int8 (two's complement), for operands decoded
// once: pos - neg byte by byte (never both nonzero, so no byte borrows).
KESTREL_HD void decode_fp4x8_s8_signed(uint32_t w, uint32_t (&v)[2]) {
  uint32_t pos[2], neg[2];
  decode_fp4x8_s8(w, pos, neg);
  for (int i = 0; i < 2; ++i) {
    // Bytes of neg negated: (~n + 1) per byte without carries across bytes,
    // since a byte of n that is 0 stays 0 and the others are at most 12.
    const uint32_t nz = ((neg[i] | (neg[i] >> 1) | (neg[i] >> 2) | (neg[i] >> 3)) & 0x01010101u);
    v[i] = pos[i] | ((~neg[i] + nz) & (nz * 0xFFu));
  }
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
