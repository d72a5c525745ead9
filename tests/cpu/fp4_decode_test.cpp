// The bit-placement FP4 decode used by the GEMV/GEMM kernels, run on the host:
// every nibble of every position decodes to e2m1 / 2^14 exactly, in the
// documented pair order.
#include <gtest/gtest.h>

#include "common/fp4_decode.cuh"
#include "common/nvfp4_codec.cuh"
#include "reference/binary16.h"

namespace kestrel {
namespace {

TEST(Fp4Decode, EveryNibbleAtEveryPositionIsExact) {
  for (int pos = 0; pos < 8; ++pos) {
    for (uint32_t code = 0; code < 16; ++code) {
      // Fill the other nibbles with a pattern that would leak if masks were wrong.
      const uint32_t filler = 0xFFFFFFFFu & ~(0xFu << (4 * pos));
      for (uint32_t fill : {0u, filler, 0x77777777u & filler, 0x88888888u & filler}) {
        const uint32_t w = fill | (code << (4 * pos));
        uint32_t h[4];
        decode_fp4x8(w, h);
        for (int q = 0; q < 4; ++q)
          for (int hi = 0; hi < 2; ++hi) {
            if (fp4_pair_index(q, hi) != pos) continue;
            const uint16_t bits = uint16_t(h[q] >> (16 * hi));
            const double got = ref::fp16_value(bits) * kFp4DecodeScale;
            const double want = e2m1_to_float(code);
            EXPECT_EQ(got, want) << "pos " << pos << " code " << code << " fill " << std::hex << fill;
            EXPECT_EQ(bits >> 15, code >> 3) << "sign of -0 must survive";
          }
      }
    }
  }
}

// The packed weight order's decode gives decode_fp4x8's output bit for bit,
// for every code at every position among leaky neighbours.
TEST(Fp4DecodePacked, MatchesTheRowMajorDecodeForEveryNibble) {
  for (int pos = 0; pos < 8; ++pos)
    for (uint32_t code = 0; code < 16; ++code) {
      const uint32_t filler = 0xFFFFFFFFu & ~(0xFu << (4 * pos));
      for (uint32_t fill : {0u, filler, 0x77777777u & filler, 0x88888888u & filler,
                            0x5A5A5A5Au & filler, 0xA5A5A5A5u & filler}) {
        const uint32_t w = fill | (code << (4 * pos));
        uint32_t want[4], got[4];
        decode_fp4x8(w, want);
        decode_packed_fp4x8(pack_fp4x8_bits(w), got);
        for (int q = 0; q < 4; ++q)
          EXPECT_EQ(got[q], want[q])
              << "pos " << pos << " code " << code << " fill " << std::hex << fill << " pair " << q;
      }
    }
}

TEST(Fp4DecodePacked, PackingIsABitPermutationOfEachByte) {
  uint32_t seen = 0;
  for (int bit = 0; bit < 8; ++bit) {
    const uint32_t p = pack_fp4x8_bits(1u << bit);
    EXPECT_EQ(__builtin_popcount(p), 1) << "bit " << bit;
    EXPECT_LT(p, 0x100u) << "bit " << bit << " left its byte";
    seen |= p;
  }
  EXPECT_EQ(seen, 0xFFu);
}

TEST(Fp4Decode, PairOrderIsAPermutation) {
  int seen = 0;
  for (int q = 0; q < 4; ++q)
    for (int hi = 0; hi < 2; ++hi) seen |= 1 << fp4_pair_index(q, hi);
  EXPECT_EQ(seen, 0xFF);
}

TEST(Fp4DecodeE4m3, EveryNibbleAtEveryPositionIsExact) {
  for (int pos = 0; pos < 8; ++pos) {
    for (uint32_t code = 0; code < 16; ++code) {
      const uint32_t filler = 0xFFFFFFFFu & ~(0xFu << (4 * pos));
      for (uint32_t fill : {0u, filler, 0x77777777u & filler, 0x88888888u & filler}) {
        const uint32_t w = fill | (code << (4 * pos));
        uint32_t even = 0, odd = 0;
        decode_fp4x8_e4m3(w, even, odd);
        const uint32_t byte = ((pos % 2 ? odd : even) >> (8 * (pos / 2))) & 0xFFu;
        EXPECT_EQ(double(e4m3_to_float(byte)) * kFp4E4m3Scale, double(e2m1_to_float(code)))
            << "pos " << pos << " code " << code << " fill " << std::hex << fill;
        EXPECT_EQ(byte >> 7, code >> 3) << "sign of -0 must survive";
      }
    }
  }
}

// The integer decode: pos - neg is twice the e2m1 value in the byte of its
// position, as unsigned parts and as signed int8, whatever the neighbours.
TEST(Fp4DecodeS8, EveryNibbleAtEveryPositionIsExact) {
  for (int pos = 0; pos < 8; ++pos)
    for (uint32_t code = 0; code < 16; ++code) {
      const uint32_t filler = 0xFFFFFFFFu & ~(0xFu << (4 * pos));
      for (uint32_t fill : {0u, filler, 0x77777777u & filler, 0x88888888u & filler}) {
        const uint32_t w = fill | (code << (4 * pos));
        uint32_t p[2], n[2], v[2];
        decode_fp4x8_s8(w, p, n);
        decode_fp4x8_s8_signed(w, v);
        const int shift = 8 * (pos % 4);
        const int up = int((p[pos / 4] >> shift) & 0xFF), un = int((n[pos / 4] >> shift) & 0xFF);
        const int sv = int(int8_t(uint8_t(v[pos / 4] >> shift)));
        const double want = e2m1_to_float(code) / kFp4S8Scale;
        EXPECT_EQ(up - un, want) << "pos " << pos << " code " << code << " fill " << std::hex
                                 << fill;
        EXPECT_TRUE(up == 0 || un == 0) << "pos " << pos << " code " << code;
        EXPECT_EQ(sv, want) << "pos " << pos << " code " << code << " fill " << std::hex << fill;
      }
    }
}

}  // namespace
}  // namespace kestrel
