#include "compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

namespace kestrel::testing {
namespace {

// Applies the NaN/inf rules, then err <= bound(i). Judges every element and
// keeps the one with the largest err / bound.
CompareReport judge(const double* out, const double* ref, int64_t n, std::string rule,
                    const std::function<double(int64_t)>& bound) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  CompareReport r;
  r.rule = std::move(rule);
  r.count = n;
  double worst_ratio = -1.0, diff2 = 0.0, ref2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double o = out[i], f = ref[i];
    double err;
    bool bad;
    if (std::isnan(f) || std::isnan(o)) {
      bad = !(std::isnan(f) && std::isnan(o));
      err = bad ? kInf : 0.0;
    } else if (std::isinf(f) || std::isinf(o)) {
      bad = o != f;
      err = bad ? kInf : 0.0;
    } else {
      err = std::fabs(o - f);
      bad = err > bound(i);
      diff2 += (o - f) * (o - f);
      ref2 += f * f;
    }
    // How far out of (or into) its bound the element is; > 1 exactly when bad.
    double ratio = 0.0;
    if (bad) {
      const double b = std::isfinite(err) ? bound(i) : 0.0;
      ratio = b > 0.0 ? std::fmax(err / b, std::nextafter(1.0, 2.0)) : kInf;
      ++r.count_bad;
    } else if (err > 0.0) {
      ratio = std::fmin(err / bound(i), 1.0);
    }
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      r.worst_index = i;
      r.worst_out = o;
      r.worst_ref = f;
      r.worst_err = err;
    }
  }
  r.pass = r.count_bad == 0;
  r.rel_l2 = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : (diff2 > 0.0 ? kInf : 0.0);
  return r;
}

CompareReport size_mismatch(size_t out, size_t ref) {
  CompareReport r;
  r.pass = false;
  r.rule = "size mismatch: out has " + std::to_string(out) + " elements, ref " +
           std::to_string(ref);
  r.count_bad = -1;
  return r;
}

}  // namespace

std::string CompareReport::to_string() const {
  if (count_bad < 0) return rule;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s [%s]: %lld of %lld elements bad; worst at %lld: out=%.9g ref=%.9g "
                "|err|=%.3g; rel_l2=%.3g",
                pass ? "PASS" : "FAIL", rule.c_str(), (long long)count_bad, (long long)count,
                (long long)worst_index, worst_out, worst_ref, worst_err, rel_l2);
  return buf;
}

CompareReport compare_close(const double* out, const double* ref, int64_t n, double atol,
                            double rtol) {
  char rule[128];
  std::snprintf(rule, sizeof rule, "|out-ref| <= %g + %g*|ref|", atol, rtol);
  return judge(out, ref, n, rule, [&](int64_t i) { return atol + rtol * std::fabs(ref[i]); });
}

CompareReport compare_fp16(const double* out, const double* ref, int64_t n) {
  CompareReport r = compare_close(out, ref, n, 1e-3, 1e-3);
  r.rule = "fp16: " + r.rule;
  return r;
}

CompareReport compare_bf16(const double* out, const double* ref, int64_t n) {
  return judge(out, ref, n, "bf16: |out-ref| <= 2^-7*|ref| + 1e-6",
               [&](int64_t i) { return std::ldexp(std::fabs(ref[i]), -7) + 1e-6; });
}

CompareReport compare_fp8_gemm_add(const double* out, const double* ref, const double* acc,
                                   const double* acc_abs, int64_t n) {
  return judge(out, ref, n, "fp8 + add: |out-ref| <= 2^-7*(|acc|+|ref|) + 2^-10*sum|ab| + 1e-6",
               [&](int64_t i) {
                 return std::ldexp(std::fabs(acc[i]) + std::fabs(ref[i]), -7) +
                        std::ldexp(acc_abs[i], -10) + 1e-6;
               });
}

namespace {
// RMS of the finite values of each row of `v` (n values, rows of row_len).
std::vector<double> row_rms(const double* v, int64_t n, int64_t row_len) {
  std::vector<double> rms(static_cast<size_t>((n + row_len - 1) / row_len), 0.0);
  for (size_t row = 0; row < rms.size(); ++row) {
    double s = 0.0;
    int64_t cnt = 0;
    for (int64_t i = int64_t(row) * row_len; i < std::min<int64_t>(n, (row + 1) * row_len); ++i)
      if (std::isfinite(v[i])) s += v[i] * v[i], ++cnt;
    rms[row] = cnt ? std::sqrt(s / double(cnt)) : 0.0;
  }
  return rms;
}

// |out - ref| <= rtol * max(|ref|, floor of the element's row).
CompareReport judge_rows(const double* out, const double* ref, int64_t n, double rtol,
                         int64_t row_len, const std::vector<double>& floor, const char* of) {
  char rule[160];
  std::snprintf(rule, sizeof rule, "|out-ref| <= %g*max(|ref|, rms(%s row of %lld))", rtol, of,
                (long long)row_len);
  return judge(out, ref, n, rule, [&](int64_t i) {
    return rtol * std::fmax(std::fabs(ref[i]), floor[size_t(i / row_len)]);
  });
}
}  // namespace

CompareReport compare_relative(const double* out, const double* ref, int64_t n, double rtol,
                               int64_t row_len) {
  if (row_len <= 0 || row_len > n) row_len = n > 0 ? n : 1;
  return judge_rows(out, ref, n, rtol, row_len, row_rms(ref, n, row_len), "ref");
}

CompareReport compare_fp32_terms(const std::vector<double>& out, const std::vector<double>& ref,
                                 const std::vector<double>& terms, int64_t row_len, double rtol) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  if (terms.size() != ref.size()) return size_mismatch(terms.size(), ref.size());
  const int64_t n = int64_t(ref.size());
  if (row_len <= 0 || row_len > n) row_len = n > 0 ? n : 1;
  std::vector<double> floor = row_rms(ref.data(), n, row_len);
  const std::vector<double> t = row_rms(terms.data(), n, row_len);
  for (size_t r = 0; r < floor.size(); ++r) floor[r] = std::fmax(floor[r], t[r]);
  CompareReport rep = judge_rows(out.data(), ref.data(), n, rtol, row_len, floor, "ref and terms");
  rep.rule = "fp32: " + rep.rule;
  return rep;
}

CompareReport compare_fp32(const double* out, const double* ref, int64_t n, double rtol,
                           int64_t row_len) {
  CompareReport r = compare_relative(out, ref, n, rtol, row_len);
  r.rule = "fp32: " + r.rule;
  return r;
}

CompareReport compare_fp16(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  return compare_fp16(out.data(), ref.data(), int64_t(ref.size()));
}
CompareReport compare_bf16(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  return compare_bf16(out.data(), ref.data(), int64_t(ref.size()));
}
CompareReport compare_fp8_gemm_add(const std::vector<double>& out, const std::vector<double>& ref,
                                   const std::vector<double>& acc,
                                   const std::vector<double>& acc_abs) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  if (acc.size() != ref.size()) return size_mismatch(acc.size(), ref.size());
  if (acc_abs.size() != ref.size()) return size_mismatch(acc_abs.size(), ref.size());
  return compare_fp8_gemm_add(out.data(), ref.data(), acc.data(), acc_abs.data(),
                              int64_t(ref.size()));
}
CompareReport compare_fp32(const std::vector<double>& out, const std::vector<double>& ref,
                           double rtol, int64_t row_len) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  return compare_fp32(out.data(), ref.data(), int64_t(ref.size()), rtol, row_len);
}
CompareReport compare_relative(const std::vector<double>& out, const std::vector<double>& ref,
                               double rtol, int64_t row_len) {
  if (out.size() != ref.size()) return size_mismatch(out.size(), ref.size());
  return compare_relative(out.data(), ref.data(), int64_t(ref.size()), rtol, row_len);
}

ExactReport compare_exact(const void* out, const void* ref, int64_t count, int elem_size) {
  ExactReport r;
  r.count = count;
  r.elem_size = elem_size;
  const auto* o = static_cast<const uint8_t*>(out);
  const auto* f = static_cast<const uint8_t*>(ref);
  for (int64_t i = 0; i < count; ++i) {
    if (std::memcmp(o + i * elem_size, f + i * elem_size, size_t(elem_size)) == 0) continue;
    if (r.count_bad++ == 0) {
      r.first_bad = i;
      std::memcpy(&r.first_out, o + i * elem_size, size_t(elem_size));  // little-endian host
      std::memcpy(&r.first_ref, f + i * elem_size, size_t(elem_size));
    }
  }
  r.pass = r.count_bad == 0;
  return r;
}

std::string ExactReport::to_string() const {
  if (count_bad < 0) return "FAIL [exact]: size mismatch";
  char buf[256];
  if (pass) {
    std::snprintf(buf, sizeof buf, "PASS [exact]: %lld elements of %d bytes identical",
                  (long long)count, elem_size);
  } else {
    std::snprintf(buf, sizeof buf,
                  "FAIL [exact]: %lld of %lld elements differ; first at %lld: out=0x%0*llx "
                  "ref=0x%0*llx",
                  (long long)count_bad, (long long)count, (long long)first_bad, 2 * elem_size,
                  (unsigned long long)first_out, 2 * elem_size, (unsigned long long)first_ref);
  }
  return buf;
}

}  // namespace kestrel::testing
