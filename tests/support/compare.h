// Pass rules for comparing kernel outputs with the float64 references.
// Every rule: a NaN output passes only where the reference is NaN, a NaN
// reference needs a NaN output, and infinities must match exactly (sign too).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::testing {

struct CompareReport {
  bool pass = true;
  std::string rule;         // the rule applied, in words
  int64_t count = 0;        // elements compared
  int64_t count_bad = 0;    // elements outside their bound
  // The element furthest outside its bound (error / allowed error); when all
  // pass, the one closest to its bound. -1 when count is 0.
  int64_t worst_index = -1;
  double worst_out = 0, worst_ref = 0, worst_err = 0;
  double rel_l2 = 0;  // ||out - ref|| / ||ref|| over the elements where both are finite
  std::string to_string() const;
};

// fp16 outputs (the GPU MODE rule): |out - ref| <= 1e-3 + 1e-3 |ref|.
CompareReport compare_fp16(const double* out, const double* ref, int64_t n);
// bf16 outputs, one bf16 rounding step: |out - ref| <= 2^-7 |ref| + 1e-6.
CompareReport compare_bf16(const double* out, const double* ref, int64_t n);
// bf16 outputs of the FP8 GEMM + add, bf16(bf16(acc) + r): one bf16 step
// of each rounding, plus the e4m3 tensor cores' summation error. Hopper's
// e4m3 wgmma aligns the terms of its sum to the largest and keeps about 14
// bits (cuBLASLt's results carry the same error, to the bit: session 42).
// Summed into fp32 every 128 of K, its worst seen was 2^-14.5 of acc_abs =
// |alpha| sum |a b| on normal data and 2^-11 on magnitudes spread over
// 2^-10 .. 448, where one product dwarfs the rest. The first term also
// covers a bf16(acc) moved a step by the summation, which the add does
// not shrink where r cancels acc:
//   |out - ref| <= 2^-7 (|acc| + |ref|) + 2^-10 acc_abs + 1e-6.
CompareReport compare_fp8_gemm_add(const double* out, const double* ref, const double* acc,
                                   const double* acc_abs, int64_t n);
// fp32 outputs: |out - ref| <= rtol * max(|ref|, rms(ref row)). The row's RMS is
// a floor on the magnitude an element is judged against: fp32 kernels make
// errors relative to the sizes they sum over (a softmax gradient that cancels
// to ~0 is still computed from terms of the row's size), so a pure relative
// rule would fail correct kernels on near-zero elements, and a fixed atol would
// not scale with the data. row_len = 0 takes the whole tensor as one row.
CompareReport compare_fp32(const double* out, const double* ref, int64_t n, double rtol = 1e-5,
                           int64_t row_len = 0);
// fp32 outputs that cancel: the floor is also the RMS of the row's `terms`,
// the magnitudes the output is computed from (softmax_bwd: y dy; RMSNorm's
// dx: rstd dy w), to which an fp32 kernel's error is relative.
CompareReport compare_fp32_terms(const std::vector<double>& out, const std::vector<double>& ref,
                                 const std::vector<double>& terms, int64_t row_len,
                                 double rtol = 1e-5);
// The same rule with any rtol, labelled as such (e.g. float64 vs float64 at 1e-12).
CompareReport compare_relative(const double* out, const double* ref, int64_t n, double rtol,
                               int64_t row_len = 0);
// The general form: |out - ref| <= atol + rtol |ref|.
CompareReport compare_close(const double* out, const double* ref, int64_t n, double atol,
                            double rtol);

// Vector forms; a size mismatch fails with rule "size mismatch".
CompareReport compare_fp16(const std::vector<double>& out, const std::vector<double>& ref);
CompareReport compare_bf16(const std::vector<double>& out, const std::vector<double>& ref);
CompareReport compare_fp8_gemm_add(const std::vector<double>& out, const std::vector<double>& ref,
                                   const std::vector<double>& acc,
                                   const std::vector<double>& acc_abs);
CompareReport compare_fp32(const std::vector<double>& out, const std::vector<double>& ref,
                           double rtol = 1e-5, int64_t row_len = 0);
CompareReport compare_relative(const std::vector<double>& out, const std::vector<double>& ref,
                               double rtol, int64_t row_len = 0);

// Exact comparison of `count` elements of `elem_size` bytes (1, 2, 4 or 8),
// reporting the first mismatching element and its bits in hex.
struct ExactReport {
  bool pass = true;
  int64_t count = 0, count_bad = 0;
  int64_t first_bad = -1;
  uint64_t first_out = 0, first_ref = 0;
  int elem_size = 1;
  std::string to_string() const;
};
ExactReport compare_exact(const void* out, const void* ref, int64_t count, int elem_size);

template <typename T>
ExactReport compare_exact(const std::vector<T>& out, const std::vector<T>& ref) {
  if (out.size() != ref.size()) {
    ExactReport r;
    r.pass = false;
    r.count_bad = -1;  // to_string says "size mismatch"
    r.count = int64_t(ref.size());
    return r;
  }
  return compare_exact(out.data(), ref.data(), int64_t(ref.size()), int(sizeof(T)));
}

}  // namespace kestrel::testing
