// GPU quantize / dequantize / scale-layout conversion against the float64
// reference: quantization byte for byte, dequantization within one rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "device_buffer.h"
#include "gpu_test.h"
#include "kestrel/nvfp4.h"
#include "reference/binary16.h"
#include "reference/reference.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;

struct Case {
  DType dtype;
  ScaleLayout layout;
  int64_t batches, rows, k;
  int64_t row_pad;  // extra elements per row of x (strided input)
  float global_scale;
};

std::string name_of(const Case& c) {
  return std::string(dtype_name(c.dtype)) + "/" + scale_layout_name(c.layout) + " L" +
         std::to_string(c.batches) + " rows" + std::to_string(c.rows) + " K" +
         std::to_string(c.k) + " pad" + std::to_string(c.row_pad) + " g" +
         std::to_string(c.global_scale);
}

// Host data as it will exist on the device (already rounded to the dtype),
// both as raw bytes and as exact doubles for the reference.
struct HostInput {
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // dense [L][rows][K]
};

HostInput make_input(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t row_elems = c.k + c.row_pad, es = dtype_size(c.dtype);
  HostInput in;
  in.bytes.assign(size_t(c.batches * c.rows * row_elems * es), 0);
  in.values.resize(size_t(c.batches * c.rows * c.k));
  for (int64_t r = 0; r < c.batches * c.rows; ++r) {
    // Rows of very different magnitude exercise the whole e4m3 scale range.
    const double mag = std::ldexp(1.0, int(r % 23) - 12) * c.global_scale;
    for (int64_t j = 0; j < c.k; ++j) {
      double x = normal(rng) * mag;
      if (j % 37 == 5) x = 0.0;  // exact zeros and sign handling
      uint8_t* dst = &in.bytes[size_t((r * row_elems + j) * es)];
      if (c.dtype == DType::kF32) {
        const float f = float(x);
        std::memcpy(dst, &f, 4);
        x = f;
      } else {
        const uint16_t b = c.dtype == DType::kBF16 ? ref::bf16_bits(x) : ref::fp16_bits(x);
        std::memcpy(dst, &b, 2);
        x = c.dtype == DType::kBF16 ? ref::bf16_value(b) : ref::fp16_value(b);
      }
      in.values[size_t(r * c.k + j)] = x;
    }
  }
  return in;
}

TensorView batched_view(void* data, DType t, int64_t l, int64_t rows, int64_t cols,
                        int64_t row_stride) {
  return TensorView::strided(data, t, {l, rows, cols}, {rows * row_stride, row_stride, 1});
}

int64_t scale_bytes(const Case& c) {
  return c.layout == ScaleLayout::kBlocked ? blocked_scale_bytes(c.rows, c.k, c.batches)
                                           : c.batches * c.rows * (c.k / 16);
}

TensorView scale_view(void* data, const Case& c) {
  return c.layout == ScaleLayout::kBlocked
             ? TensorView::dense(data, DType::kE4M3, {scale_bytes(c)})
             : TensorView::dense(data, DType::kE4M3, {c.batches, c.rows, c.k / 16});
}

class Nvfp4CodecGpu : public ::testing::TestWithParam<Case> {};

TEST_P(Nvfp4CodecGpu, QuantizeMatchesReferenceByteForByte) {
  KESTREL_REQUIRE_GPU();
  const Case c = GetParam();
  const HostInput in = make_input(c, 1234 + c.rows * 7 + c.k);
  const auto want = ref::quantize_nvfp4(in.values.data(), c.batches, c.rows, c.k, c.global_scale,
                                        c.layout);

  DeviceBuffer x(in.bytes.size()), values(size_t(c.batches * c.rows * c.k / 2)),
      scales(size_t(scale_bytes(c)));
  x.upload(in.bytes.data(), in.bytes.size());
  values.poison();
  scales.poison();
  Nvfp4View out{batched_view(values.get(), DType::kE2M1x2, c.batches, c.rows, c.k / 2, c.k / 2),
                scale_view(scales.get(), c), c.layout, c.global_scale};
  const Status st = quantize_nvfp4(
      batched_view(x.get(), c.dtype, c.batches, c.rows, c.k, c.k + c.row_pad), out, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();

  const auto got_values = values.download<uint8_t>();
  const auto got_scales = scales.download<uint8_t>();
  ASSERT_EQ(got_values.size(), want.values.size());
  ASSERT_EQ(got_scales.size(), want.scales.size());
  for (size_t i = 0; i < got_values.size(); ++i)
    ASSERT_EQ(int(got_values[i]), int(want.values[i])) << name_of(c) << " value byte " << i;
  for (size_t i = 0; i < got_scales.size(); ++i)
    ASSERT_EQ(int(got_scales[i]), int(want.scales[i])) << name_of(c) << " scale byte " << i;
}

TEST_P(Nvfp4CodecGpu, DequantizeMatchesReference) {
  KESTREL_REQUIRE_GPU();
  const Case c = GetParam();
  const HostInput in = make_input(c, 99 + c.rows);
  const auto q = ref::quantize_nvfp4(in.values.data(), c.batches, c.rows, c.k, c.global_scale,
                                     c.layout);
  const auto want = ref::dequantize_nvfp4(q);

  const int64_t row_elems = c.k + c.row_pad, es = dtype_size(c.dtype);
  DeviceBuffer values = DeviceBuffer::from(q.values), scales = DeviceBuffer::from(q.scales),
               y(size_t(c.batches * c.rows * row_elems * es));
  y.poison();
  Nvfp4View view{batched_view(values.get(), DType::kE2M1x2, c.batches, c.rows, c.k / 2, c.k / 2),
                 scale_view(scales.get(), c), c.layout, c.global_scale};
  const Status st = dequantize_nvfp4(
      view, batched_view(y.get(), c.dtype, c.batches, c.rows, c.k, row_elems), nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const auto got = y.download<uint8_t>();
  for (int64_t r = 0; r < c.batches * c.rows; ++r) {
    for (int64_t j = 0; j < c.k; ++j) {
      const uint8_t* p = &got[size_t((r * row_elems + j) * es)];
      double v;
      if (c.dtype == DType::kF32) {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
      } else {
        uint16_t b;
        std::memcpy(&b, p, 2);
        v = c.dtype == DType::kBF16 ? ref::bf16_value(b) : ref::fp16_value(b);
      }
      const double w = want[size_t(r * c.k + j)];
      // One rounding of the output type (the GPU rounds s*g once in fp32 too).
      const double tol = c.dtype == DType::kF32 ? 2e-7 * std::fabs(w)
                         : c.dtype == DType::kBF16 ? std::ldexp(std::fabs(w), -7) + 1e-30
                                                   : std::ldexp(std::fabs(w), -10) + 6e-8;
      ASSERT_LE(std::fabs(v - w), tol) << name_of(c) << " at row " << r << " col " << j;
    }
  }
}

TEST_P(Nvfp4CodecGpu, ScaleLayoutRoundTrip) {
  KESTREL_REQUIRE_GPU();
  const Case c = GetParam();
  if (c.layout != ScaleLayout::kLinear) GTEST_SKIP() << "covered by the linear case";
  const HostInput in = make_input(c, 7);
  const auto q = ref::quantize_nvfp4(in.values.data(), c.batches, c.rows, c.k, c.global_scale,
                                     ScaleLayout::kLinear);
  const auto want_blocked =
      ref::convert_scales(q.scales, ScaleLayout::kLinear, ScaleLayout::kBlocked, c.rows, c.k,
                          c.batches);
  DeviceBuffer lin = DeviceBuffer::from(q.scales), blk(want_blocked.size()),
               back(q.scales.size());
  blk.poison();
  back.poison();
  Case cb = c;
  cb.layout = ScaleLayout::kBlocked;
  ASSERT_TRUE(convert_scale_layout(scale_view(lin.get(), c), ScaleLayout::kLinear,
                                   scale_view(blk.get(), cb), ScaleLayout::kBlocked, c.rows, c.k,
                                   c.batches, nullptr)
                  .ok());
  ASSERT_TRUE(convert_scale_layout(scale_view(blk.get(), cb), ScaleLayout::kBlocked,
                                   scale_view(back.get(), c), ScaleLayout::kLinear, c.rows, c.k,
                                   c.batches, nullptr)
                  .ok());
  EXPECT_EQ(blk.download<uint8_t>(), want_blocked) << name_of(c);
  EXPECT_EQ(back.download<uint8_t>(), q.scales) << name_of(c);
}

// The conversion's edges: partial row tiles and k-tiles, rows whose blocks
// end inside a 16-byte chunk, strided and unaligned linear sides (its byte
// path) and batches. The linear side is a window of a larger poisoned
// buffer: its gaps and the bytes around it must stay unwritten.
TEST(Nvfp4CodecScaleLayout, ConversionEdgesRoundTrip) {
  KESTREL_REQUIRE_GPU();
  struct Edge {
    int64_t batches, rows, kblocks, row_stride, offset;
  };
  for (const Edge e : {Edge{1, 1, 1, 1, 0}, Edge{2, 200, 36, 48, 0}, Edge{2, 129, 100, 100, 0},
                       Edge{1, 300, 64, 64, 1}, Edge{3, 64, 48, 64, 16}, Edge{1, 128, 33, 33, 3}}) {
    const std::string name = "L" + std::to_string(e.batches) + " rows" + std::to_string(e.rows) +
                             " K/16 " + std::to_string(e.kblocks) + " stride" +
                             std::to_string(e.row_stride) + " offset" + std::to_string(e.offset);
    const int64_t k = e.kblocks * 16, span = e.batches * e.rows * e.row_stride + 2 * e.offset + 32;
    std::mt19937_64 rng(uint64_t(e.rows * 131 + e.kblocks));
    std::vector<uint8_t> dense(static_cast<size_t>(e.batches * e.rows * e.kblocks)),
        window(static_cast<size_t>(span));
    for (auto& x : window) x = uint8_t(rng());
    for (int64_t r = 0; r < e.batches * e.rows; ++r)
      for (int64_t j = 0; j < e.kblocks; ++j)
        dense[size_t(r * e.kblocks + j)] = window[size_t(e.offset + r * e.row_stride + j)];
    const auto want_blocked = ref::convert_scales(dense, ScaleLayout::kLinear,
                                                  ScaleLayout::kBlocked, e.rows, k, e.batches);
    DeviceBuffer lin = DeviceBuffer::from(window), blk(want_blocked.size()), back(window.size());
    blk.poison();
    back.poison();
    const auto linear_view = [&](const DeviceBuffer& buf) {
      return batched_view(static_cast<uint8_t*>(buf.get()) + e.offset, DType::kE4M3, e.batches,
                          e.rows, e.kblocks, e.row_stride);
    };
    const TensorView blocked =
        TensorView::dense(blk.get(), DType::kE4M3, {int64_t(want_blocked.size())});
    Status st = convert_scale_layout(linear_view(lin), ScaleLayout::kLinear, blocked,
                                     ScaleLayout::kBlocked, e.rows, k, e.batches, nullptr);
    ASSERT_TRUE(st.ok()) << name << ": " << st.to_string();
    st = convert_scale_layout(blocked, ScaleLayout::kBlocked, linear_view(back),
                              ScaleLayout::kLinear, e.rows, k, e.batches, nullptr);
    ASSERT_TRUE(st.ok()) << name << ": " << st.to_string();
    EXPECT_EQ(blk.download<uint8_t>(), want_blocked) << name;
    const auto got = back.download<uint8_t>();
    for (int64_t i = 0; i < span; ++i) {
      const int64_t rel = i - e.offset, row = rel / e.row_stride, col = rel % e.row_stride;
      const bool inside = rel >= 0 && row < e.batches * e.rows && col < e.kblocks;
      ASSERT_EQ(int(got[size_t(i)]), inside ? int(window[size_t(i)]) : int(testing::kPoison))
          << name << " byte " << i << (inside ? " (scale)" : " (gap: must stay unwritten)");
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
    for (ScaleLayout l : {ScaleLayout::kLinear, ScaleLayout::kBlocked}) {
      out.push_back({t, l, 1, 1, 16, 0, 1.0f});        // smallest legal shape
      out.push_back({t, l, 3, 77, 208, 8, 0.37f});     // odd rows, K % 64 != 0, strided x
      out.push_back({t, l, 2, 130, 1024, 0, 3.5e-3f});
      out.push_back({t, l, 1, 256, 4096, 0, 1.0f});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Nvfp4CodecGpu, ::testing::ValuesIn(cases()));

// Every bf16 / fp16 bit pattern once, in order, so that a block holds 16
// neighbouring patterns: subnormals, zeros of both signs, infinities and NaNs
// (the reference ignores NaN in amax and gives it code 0) all meet the 2-byte
// rounding tables, at global scales whose thresholds need the FMA residual.
TEST(Nvfp4CodecSpecials, QuantizeEveryBitPatternByteForByte) {
  KESTREL_REQUIRE_GPU();
  const int64_t rows = 256, k = 256;
  for (DType t : {DType::kBF16, DType::kF16})
    for (ScaleLayout layout : {ScaleLayout::kLinear, ScaleLayout::kBlocked})
      for (float g : {1.0f, 0.37f, 1.0f / 2688.0f, 1e-30f}) {
        const Case c{t, layout, 1, rows, k, 0, g};
        std::vector<uint16_t> bits(size_t(rows * k));
        std::vector<double> values(bits.size());
        for (size_t i = 0; i < bits.size(); ++i) {
          bits[i] = uint16_t(i);
          values[i] = t == DType::kBF16 ? ref::bf16_value(bits[i]) : ref::fp16_value(bits[i]);
        }
        const auto want = ref::quantize_nvfp4(values.data(), 1, rows, k, g, layout);
        DeviceBuffer x = DeviceBuffer::from(bits), q_values(size_t(rows * k / 2)),
                     q_scales(size_t(scale_bytes(c)));
        q_values.poison();
        q_scales.poison();
        Nvfp4View out{batched_view(q_values.get(), DType::kE2M1x2, 1, rows, k / 2, k / 2),
                      scale_view(q_scales.get(), c), layout, g};
        ASSERT_TRUE(quantize_nvfp4(batched_view(x.get(), t, 1, rows, k, k), out, nullptr).ok());
        EXPECT_EQ(q_values.download<uint8_t>(), want.values) << name_of(c);
        EXPECT_EQ(q_scales.download<uint8_t>(), want.scales) << name_of(c);
      }
}

TEST(Nvfp4CodecArgs, BadArgumentsNameTheRule) {
  // Validation happens before any CUDA call, so this runs without a GPU too.
  Case c{DType::kBF16, ScaleLayout::kLinear, 1, 4, 40, 0, 1.0f};
  char dummy[64];
  Nvfp4View out{TensorView::dense(dummy, DType::kE2M1x2, {1, 4, 20}),
                TensorView::dense(dummy, DType::kE4M3, {1, 4, 2}), ScaleLayout::kLinear, 1.0f};
  Status st = quantize_nvfp4(TensorView::dense(dummy, DType::kBF16, {1, 4, 40}), out, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("multiple of 16"), std::string::npos) << st.message();

  Nvfp4View good{TensorView::dense(dummy, DType::kE2M1x2, {1, 4, 16}),
                 TensorView::dense(dummy, DType::kE4M3, {1, 4, 2}), ScaleLayout::kLinear, 1.0f};
  st = quantize_nvfp4(TensorView::dense(dummy, DType::kI32, {1, 4, 32}), good, nullptr);
  EXPECT_NE(st.message().find("x: dtype"), std::string::npos) << st.message();
  st = quantize_nvfp4(TensorView::dense(dummy, DType::kBF16, {1, 5, 32}), good, nullptr);
  EXPECT_NE(st.message().find("x: shape"), std::string::npos) << st.message();
  good.global_scale = 0.0f;
  st = quantize_nvfp4(TensorView::dense(dummy, DType::kBF16, {1, 4, 32}), good, nullptr);
  EXPECT_NE(st.message().find("global_scale"), std::string::npos) << st.message();
  (void)c;
}

}  // namespace
}  // namespace kestrel
