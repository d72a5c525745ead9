// Deterministic test inputs. Everything derives from a seeded std::mt19937_64
// through our own uniform/normal transforms (not std::*_distribution, whose
// algorithms differ between standard libraries), so a seed names the same data
// on every machine.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace kestrel::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t bits() { return gen_(); }
  double uniform();            // [0, 1), 53 random bits
  double normal();             // standard normal (Box-Muller)
  int64_t below(int64_t n);    // uniform in [0, n); the modulo bias is < 2^-40 for small n

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

std::vector<double> random_normal(int64_t n, uint64_t seed, double stddev = 1.0);

// The value ranges of the GPU MODE NVFP4 problem generators
// (/work/shared/workloads/README.md); linear scales, global scale 1:
//   kGemv:    bytes in {0,1,2,3}, scales e4m3 {0, 1, 2}
//   kGemm:    bytes uniform over 0..255, scales e4m3 {0, 1, 2, 3}
//   kDual:    bytes & 0xBB, scales uniform [0, 1) rounded to e4m3 (subnormals included)
//   kGrouped: bytes & 0xBB, scales e4m3 {1, 2}
enum class GpuModeData { kGemv, kGemm, kDual, kGrouped };
ref::HostNvfp4 gpumode_nvfp4(GpuModeData kind, int64_t batches, int64_t rows, int64_t k,
                             uint64_t seed);

// "Realistic" NVFP4: normal(0, stddev) data quantized by the reference
// quantizer with the global scale amax / (6 * 448) (as real checkpoints do, so
// the block scales use the whole e4m3 range). The source data is returned in
// *source when given.
ref::HostNvfp4 realistic_nvfp4(int64_t batches, int64_t rows, int64_t k, uint64_t seed,
                               ScaleLayout layout = ScaleLayout::kLinear, double stddev = 1.0,
                               std::vector<double>* source = nullptr);

// e4m3 codes of normal(0, stddev) data (RNE, saturating at 448), for FP8 GEMMs.
std::vector<uint8_t> random_e4m3(int64_t n, uint64_t seed, double stddev = 1.0);
// bf16 bit patterns of normal(0, stddev) data (RNE).
std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed, double stddev = 1.0);
// Cross-entropy targets uniform in [0, V); when ignore_every > 0, rows
// ignore_every - 1, 2 * ignore_every - 1, ... are ignore_index instead.
std::vector<int64_t> random_targets(int64_t m, int64_t v, uint64_t seed,
                                    int64_t ignore_index = -100, int64_t ignore_every = 0);

}  // namespace kestrel::testing
