// Row reductions in float64: RMSNorm, softmax and cross-entropy, forward and
// backward. Straightforward two-pass formulas: in double, the max-shifted
// exponentials and plain sums are accurate far beyond the fp32 outputs judged
// against them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "reference/checks.h"
#include "reference/reference.h"

namespace kestrel::ref {
namespace {

double row_max(const double* x, int64_t n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);
  return mx;
}

// log(sum_j exp(x_j)), shifted by the max so that no exp overflows.
double row_lse(const double* x, int64_t n) {
  const double mx = row_max(x, n);
  if (std::isinf(mx)) return mx;  // all -inf (or a +inf) row: lse is the max itself
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - mx);
  return mx + std::log(s);
}

}  // namespace

RmsNormFwd rmsnorm_fwd(const double* x, const double* weight, int64_t m, int64_t n, double eps) {
  detail::require(m >= 0 && n > 0, "rmsnorm_fwd: need M >= 0 and N > 0");
  RmsNormFwd out;
  out.y.resize(size_t(m * n));
  out.rstd.resize(size_t(m));
  for (int64_t i = 0; i < m; ++i) {
    const double* xr = x + i * n;
    double ss = 0.0;
    for (int64_t j = 0; j < n; ++j) ss += xr[j] * xr[j];
    const double rstd = 1.0 / std::sqrt(ss / double(n) + eps);
    out.rstd[size_t(i)] = rstd;
    for (int64_t j = 0; j < n; ++j)
      out.y[size_t(i * n + j)] = xr[j] * rstd * (weight ? weight[j] : 1.0);
  }
  return out;
}

// With xhat = x * rstd and g = dy * w:
//   dx = rstd * (g - xhat * mean_j(g_j * xhat_j)),   dweight = sum_rows dy * xhat.
RmsNormBwd rmsnorm_bwd(const double* dy, const double* x, const double* weight,
                       const double* rstd, int64_t m, int64_t n) {
  detail::require(m >= 0 && n > 0, "rmsnorm_bwd: need M >= 0 and N > 0");
  RmsNormBwd out;
  out.dx.resize(size_t(m * n));
  if (weight) out.dweight.assign(size_t(n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const double* xr = x + i * n;
    const double* gr = dy + i * n;
    const double r = rstd[i];
    double dot = 0.0;  // sum_j g_j * xhat_j
    for (int64_t j = 0; j < n; ++j) dot += gr[j] * (weight ? weight[j] : 1.0) * xr[j] * r;
    const double mean_dot = dot / double(n);
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = xr[j] * r;
      const double g = gr[j] * (weight ? weight[j] : 1.0);
      out.dx[size_t(i * n + j)] = r * (g - xhat * mean_dot);
      if (weight) out.dweight[size_t(j)] += gr[j] * xhat;
    }
  }
  return out;
}

// exp(x - max) / sum rather than exp(x - lse): lse carries the absolute error
// of a number of the logits' size, which exp would turn into a relative error.
std::vector<double> softmax_fwd(const double* x, int64_t m, int64_t n) {
  detail::require(m >= 0 && n > 0, "softmax_fwd: need M >= 0 and N > 0");
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    const double* xr = x + i * n;
    double* yr = y.data() + i * n;
    const double mx = row_max(xr, n);
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += (yr[j] = std::exp(xr[j] - mx));
    for (int64_t j = 0; j < n; ++j) yr[j] /= s;
  }
  return y;
}

// dx = y * (dy - sum_j dy_j * y_j)
std::vector<double> softmax_bwd(const double* dy, const double* y, int64_t m, int64_t n) {
  detail::require(m >= 0 && n > 0, "softmax_bwd: need M >= 0 and N > 0");
  std::vector<double> dx(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    double dot = 0.0;
    for (int64_t j = 0; j < n; ++j) dot += dy[i * n + j] * y[i * n + j];
    for (int64_t j = 0; j < n; ++j) dx[size_t(i * n + j)] = y[i * n + j] * (dy[i * n + j] - dot);
  }
  return dx;
}

namespace {

// A target is either ignore_index or a class in [0, V); anything else is an
// error in torch too (it raises), so the reference refuses it.
bool ignored(const int64_t* target, int64_t i, int64_t v, int64_t ignore_index) {
  if (target[i] == ignore_index) return true;
  detail::require(target[i] >= 0 && target[i] < v,
                  "cross_entropy: target " + std::to_string(target[i]) + " of row " +
                      std::to_string(i) + " is outside [0, V) and is not ignore_index");
  return false;
}

int64_t count_kept(const int64_t* target, int64_t m, int64_t v, int64_t ignore_index) {
  int64_t kept = 0;
  for (int64_t i = 0; i < m; ++i) kept += ignored(target, i, v, ignore_index) ? 0 : 1;
  return kept;
}

}  // namespace

// loss_i = (1 - eps) * (lse - x_t) + eps * (lse - mean_j x_j): the label-smoothed
// target puts 1 - eps + eps/V on t and eps/V on every other class.
CrossEntropyFwd cross_entropy_fwd(const double* logits, const int64_t* target, int64_t m,
                                  int64_t v, int64_t ignore_index, double label_smoothing,
                                  Reduction reduction) {
  detail::require(m >= 0 && v > 0, "cross_entropy_fwd: need M >= 0 and V > 0");
  const double eps = label_smoothing;
  CrossEntropyFwd out;
  out.lse.resize(size_t(m));
  std::vector<double> loss(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const double* x = logits + i * v;
    const double lse = row_lse(x, v);
    out.lse[size_t(i)] = lse;
    if (ignored(target, i, v, ignore_index)) continue;
    double mean = 0.0;
    if (eps != 0.0) {
      for (int64_t j = 0; j < v; ++j) mean += x[j];
      mean /= double(v);
    }
    loss[size_t(i)] = (1.0 - eps) * (lse - x[target[i]]) + (eps != 0.0 ? eps * (lse - mean) : 0.0);
  }
  if (reduction == Reduction::kNone) {
    out.loss = std::move(loss);
    return out;
  }
  double total = 0.0;
  for (double l : loss) total += l;
  if (reduction == Reduction::kMean) {
    // torch divides by the number of non-ignored rows: 0/0 = NaN when all are ignored.
    total /= double(count_kept(target, m, v, ignore_index));
  }
  out.loss = {total};
  return out;
}

// dlogits_ij = g_i * (softmax_ij - (1 - eps) [j == t_i] - eps / V) with softmax
// recomputed from the saved lse; g_i = dloss_i (none), dloss (sum) or
// dloss / kept (mean). Ignored rows get zero gradient.
std::vector<double> cross_entropy_bwd(const double* dloss, const double* logits,
                                      const int64_t* target, const double* lse, int64_t m,
                                      int64_t v, int64_t ignore_index, double label_smoothing,
                                      Reduction reduction) {
  detail::require(m >= 0 && v > 0, "cross_entropy_bwd: need M >= 0 and V > 0");
  const double eps = label_smoothing;
  std::vector<double> dx(static_cast<size_t>(m * v), 0.0);
  const double kept =
      reduction == Reduction::kMean ? double(count_kept(target, m, v, ignore_index)) : 1.0;
  for (int64_t i = 0; i < m; ++i) {
    if (ignored(target, i, v, ignore_index)) continue;
    const double g = reduction == Reduction::kNone ? dloss[i] : dloss[0] / kept;
    const double* x = logits + i * v;
    double* d = dx.data() + i * v;
    for (int64_t j = 0; j < v; ++j) d[j] = g * (std::exp(x[j] - lse[i]) - eps / double(v));
    d[target[i]] -= g * (1.0 - eps);
  }
  return dx;
}

}  // namespace kestrel::ref
