#include "random.h"

#include <algorithm>
#include <cmath>

#include "common/nvfp4_codec.cuh"
#include "reference/binary16.h"

namespace kestrel::testing {

double Rng::uniform() { return double(gen_() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1)), th = 2.0 * M_PI * u2;
  spare_ = r * std::sin(th);
  has_spare_ = true;
  return r * std::cos(th);
}

int64_t Rng::below(int64_t n) { return int64_t(gen_() % uint64_t(n)); }

std::vector<double> random_normal(int64_t n, uint64_t seed, double stddev) {
  Rng rng(seed);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& v : x) v = stddev * rng.normal();
  return x;
}

ref::HostNvfp4 gpumode_nvfp4(GpuModeData kind, int64_t batches, int64_t rows, int64_t k,
                             uint64_t seed) {
  // e4m3 codes of 0, 1, 2, 3.
  static constexpr uint8_t kScaleCodes[] = {0x00, 0x38, 0x40, 0x44};
  Rng rng(seed);
  ref::HostNvfp4 t;
  t.batches = batches;
  t.rows = rows;
  t.k = k;
  t.values.resize(size_t(batches * rows * (k / 2)));
  t.scales.resize(size_t(batches * rows * (k / 16)));
  for (uint8_t& b : t.values) {
    switch (kind) {
      case GpuModeData::kGemv: b = uint8_t(rng.below(4)); break;
      case GpuModeData::kGemm: b = uint8_t(rng.below(256)); break;
      default: b = uint8_t(rng.below(256) & 0xBB); break;
    }
  }
  for (uint8_t& s : t.scales) {
    switch (kind) {
      case GpuModeData::kGemv: s = kScaleCodes[rng.below(3)]; break;
      case GpuModeData::kGemm: s = kScaleCodes[rng.below(4)]; break;
      case GpuModeData::kDual: s = uint8_t(e4m3_from_nonneg(rng.uniform())); break;
      case GpuModeData::kGrouped: s = kScaleCodes[1 + rng.below(2)]; break;
    }
  }
  return t;
}

ref::HostNvfp4 realistic_nvfp4(int64_t batches, int64_t rows, int64_t k, uint64_t seed,
                               ScaleLayout layout, double stddev, std::vector<double>* source) {
  const std::vector<double> x = random_normal(batches * rows * k, seed, stddev);
  double amax = 0.0;
  for (double v : x) amax = std::max(amax, std::fabs(v));
  const float global = amax > 0.0 ? float(amax / (6.0 * 448.0)) : 1.0f;
  if (source) *source = x;
  return ref::quantize_nvfp4(x.data(), batches, rows, k, global, layout);
}

std::vector<uint8_t> random_e4m3(int64_t n, uint64_t seed, double stddev) {
  Rng rng(seed);
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (uint8_t& c : out) {
    const double v = stddev * rng.normal();
    const unsigned mag = e4m3_from_nonneg(std::fabs(v));
    c = uint8_t((v < 0.0 && mag != 0) ? (mag | 0x80u) : mag);
  }
  return out;
}

std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed, double stddev) {
  Rng rng(seed);
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (uint16_t& b : out) b = ref::bf16_bits(stddev * rng.normal());
  return out;
}

std::vector<int64_t> random_targets(int64_t m, int64_t v, uint64_t seed, int64_t ignore_index,
                                    int64_t ignore_every) {
  Rng rng(seed);
  std::vector<int64_t> t(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    t[size_t(i)] = rng.below(v);  // drawn for every row so ignore_every does not shift the rest
    if (ignore_every > 0 && (i + 1) % ignore_every == 0) t[size_t(i)] = ignore_index;
  }
  return t;
}

}  // namespace kestrel::testing
