// RMSNorm, softmax and cross-entropy (forward and backward) as check/bench
// ops. All are memory-bound: SOL is the bytes of every input read once and
// every output written once over the copy bandwidth (the dweight and loss
// partials of the deterministic reductions are not counted); the peer is a
// kernel moving the op's M x N tensors with no arithmetic (make_stream_peer).
// Torch peers: scripts/torch_peers.py.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/device_memory.h"
#include "bench/host_tensors.h"
#include "bench/op_registry.h"
#include "compare.h"
#include "device_buffer.h"
#include "kestrel/rowwise.h"
#include "ops/rowwise_plan.h"
#include "random.h"
#include "reference/reference.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

constexpr const char* kFamily = "rowwise";

struct Shape {
  int64_t m = 0, n = 0;
  DType t = DType::kBF16;
  int es() const { return dtype_size(t); }
  double elems() const { return double(m) * double(n); }
};

Status read_shape(const Params& p, Shape* s) {
  s->m = p.integer("m");
  s->n = p.integer("n");
  s->t = float_dtype(p.text("dtype"));
  if (s->m < 1) return Status::InvalidArgument("m: must be at least 1, got " + p.text("m"));
  if (s->n < 1 || s->n > kRowwiseMaxN)
    return Status::InvalidArgument("n: must be in [1, " + std::to_string(kRowwiseMaxN) + "], got " +
                                   p.text("n"));
  return Status::Ok();
}

// The configuration named by threads/tpr/cluster/l2_group, or none (heuristic) when all are 0.
struct MaybeConfig {
  bool set = false;
  RowwiseConfig cfg;
  const RowwiseConfig* get() const { return set ? &cfg : nullptr; }
};
MaybeConfig read_config(const Params& p) {
  MaybeConfig c;
  const bool l2 = p.values().count("l2_group") && p.integer("l2_group") != 0;  // rmsnorm_bwd
  const int rpt = p.values().count("rpt") ? int(p.integer("rpt")) : 0;
  c.set = p.integer("threads") != 0 || p.integer("tpr") != 0 || p.integer("cluster") != 0 || l2 ||
          rpt != 0;
  if (p.integer("threads")) c.cfg.threads = int(p.integer("threads"));
  if (p.integer("tpr")) c.cfg.threads_per_row = int(p.integer("tpr"));
  if (p.integer("cluster")) c.cfg.cluster = int(p.integer("cluster"));
  c.cfg.l2_group = l2;
  if (rpt) c.cfg.rows_per_thread = rpt;
  return c;
}

Reduction reduction_of(const Params& p) {
  const std::string& r = p.text("reduction");
  return r == "none" ? Reduction::kNone : r == "sum" ? Reduction::kSum : Reduction::kMean;
}
ref::Reduction ref_reduction(Reduction r) {
  return r == Reduction::kNone  ? ref::Reduction::kNone
         : r == Reduction::kSum ? ref::Reduction::kSum
                                : ref::Reduction::kMean;
}

std::string label(const Shape& s, const Params& p, const std::string& extra = "") {
  const MaybeConfig c = read_config(p);
  return std::to_string(s.m) + "x" + std::to_string(s.n) + " " + p.text("dtype") + extra +
         (c.set ? " [" + c.cfg.describe() + "]" : "");
}

TensorView rows(void* p, const Shape& s) { return TensorView::dense(p, s.t, {s.m, s.n}); }
TensorView vec(void* p, DType t, int64_t len) { return TensorView::dense(p, t, {len}); }

// ---- Device data ----

// `slots` copies of `bytes` of data: a host pattern of at most 16 MiB
// (normal(0, scale) values of dtype t, or raw bytes), repeated on the device.
Status fill_repeating(SlottedBuffer* b, size_t bytes, int slots,
                      const std::vector<uint8_t>& pattern) {
  KESTREL_RETURN_IF_ERROR(b->allocate(bytes, slots));
  const size_t first = std::min(bytes, pattern.size());
  KESTREL_CUDA_RETURN(cudaMemcpy(b->at(0), pattern.data(), first, cudaMemcpyHostToDevice));
  for (size_t done = first; done < bytes;) {
    const size_t chunk = std::min(done, bytes - done);
    KESTREL_CUDA_RETURN(cudaMemcpy(static_cast<uint8_t*>(b->at(0)) + done, b->at(0), chunk,
                                   cudaMemcpyDeviceToDevice));
    done += chunk;
  }
  for (int s = 1; s < slots; ++s)
    KESTREL_CUDA_RETURN(cudaMemcpy(b->at(s), b->at(0), bytes, cudaMemcpyDeviceToDevice));
  return Status::Ok();
}
Status fill_floats(SlottedBuffer* b, int64_t count, DType t, int slots, uint64_t seed,
                   double scale = 1.0) {
  auto values = timing_data(std::min<int64_t>(count, int64_t(1) << 22), seed);
  for (double& v : values) v *= scale;
  return fill_repeating(b, size_t(count) * size_t(dtype_size(t)), slots,
                        encode_floats(values, t, nullptr));
}
// Rows whose target is not ignore_index: cross_entropy_bwd's total_weight.
float kept_rows(const std::vector<int64_t>& target, int64_t ignore_index) {
  return float(std::count_if(target.begin(), target.end(),
                             [&](int64_t v) { return v != ignore_index; }));
}

// The same targets in every slot; *kept (optional): kept_rows of them.
Status fill_targets(SlottedBuffer* b, const Shape& s, int slots, float* kept = nullptr) {
  const auto t = testing::random_targets(s.m, s.n, 3, -100, 16);
  if (kept != nullptr) *kept = kept_rows(t, -100);
  const auto* p = reinterpret_cast<const uint8_t*>(t.data());
  return fill_repeating(b, size_t(s.m) * 8, slots, std::vector<uint8_t>(p, p + t.size() * 8));
}

// One-shot device copies for checks.
Status upload_bytes(DeviceBuffer* b, const std::vector<uint8_t>& host) {
  KESTREL_RETURN_IF_ERROR(b->allocate(host.size()));
  return b->upload(host.data(), host.size());
}
Status upload_f32(DeviceBuffer* b, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  KESTREL_RETURN_IF_ERROR(b->allocate(f.size() * 4));
  return b->upload(f.data(), f.size() * 4);
}
Status poisoned(DeviceBuffer* b, size_t bytes) {
  KESTREL_RETURN_IF_ERROR(b->allocate(bytes));
  return b->fill(testing::kPoison);
}
Status download_floats(const DeviceBuffer& b, DType t, std::vector<double>* out) {
  std::vector<uint8_t> raw(b.size());
  KESTREL_RETURN_IF_ERROR(b.download(raw.data(), raw.size()));
  *out = decode_floats(raw, t);
  return Status::Ok();
}
// Random normal(0, scale) data rounded to t: device bytes and exact values.
std::vector<uint8_t> random_floats(int64_t count, DType t, uint64_t seed,
                                   std::vector<double>* exact, double scale = 1.0) {
  return encode_floats(testing::random_normal(count, seed, scale), t, exact);
}

// The output rule of the tests: fp32 relative 1e-5 per row, bf16/fp16 one rounding.
void judge(DType t, const std::vector<double>& got, const std::vector<double>& want,
           int64_t row_len, const std::string& what, CheckReport* out) {
  const auto r = t == DType::kF32 ? testing::compare_fp32(got, want, 1e-5, row_len)
                                  : compare_floats(t, got, want);
  out->pass = (out->detail.empty() || out->pass) && r.pass;
  out->detail += (out->detail.empty() ? "" : "\n") + what + ": " + r.to_string();
}

// The M x N tensors an op reads and writes (its DRAM traffic, as the stream peer moves it).
struct Streams {
  int reads = 1, writes = 1;
};

// Finishes a bench case: shape label, launch, the stream peer of the op's tensors.
Status finish_case(BenchCase* out, const Shape& s, Streams io, std::string label, int slots,
                   std::function<Status(cudaStream_t, int)> fn) {
  out->shape = std::move(label);
  out->launch.slots = slots;
  out->launch.fn = std::move(fn);
  PeerLaunch stream;
  KESTREL_RETURN_IF_ERROR(
      make_stream_peer(int64_t(s.elems()) * s.es(), io.reads, io.writes, slots, &stream));
  out->peers.push_back(std::move(stream));
  return Status::Ok();
}

// ---- rmsnorm_fwd ----

Status check_rmsnorm_fwd(const Params& p, const OpEnv& env, CheckReport* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const bool weighted = p.text("weight") == "yes", residual = p.text("residual") == "yes";
  const uint64_t seed = uint64_t(p.integer("seed"));
  std::vector<double> x, r, w;
  DeviceBuffer dx, dr, dw, y, h, rstd;
  KESTREL_RETURN_IF_ERROR(upload_bytes(&dx, random_floats(s.m * s.n, s.t, seed, &x)));
  if (residual) {
    KESTREL_RETURN_IF_ERROR(upload_bytes(&dr, random_floats(s.m * s.n, s.t, seed + 1, &r)));
    KESTREL_RETURN_IF_ERROR(poisoned(&h, size_t(s.elems()) * s.es()));
    // The reference normalizes h = x + residual as stored (rounded to t).
    std::vector<double> sum(x.size());
    for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + r[i];
    encode_floats(sum, s.t, &x);
  }
  if (weighted)
    KESTREL_RETURN_IF_ERROR(upload_bytes(&dw, random_floats(s.n, s.t, seed + 2, &w, 0.5)));
  KESTREL_RETURN_IF_ERROR(poisoned(&y, size_t(s.elems()) * s.es()));
  KESTREL_RETURN_IF_ERROR(poisoned(&rstd, size_t(s.m) * 4));
  const auto want = ref::rmsnorm_fwd(x.data(), weighted ? w.data() : nullptr, s.m, s.n, 1e-6);
  RmsNormOptions opt;
  const MaybeConfig cfg = read_config(p);
  opt.config = cfg.get();
  const TensorView wv = weighted ? vec(dw.get(), s.t, s.n) : TensorView{};
  KESTREL_RETURN_IF_ERROR(
      residual ? rmsnorm_fwd_residual(rows(dx.get(), s), rows(dr.get(), s), wv, rows(y.get(), s),
                                      rows(h.get(), s), vec(rstd.get(), DType::kF32, s.m),
                                      env.stream, opt)
               : rmsnorm_fwd(rows(dx.get(), s), wv, rows(y.get(), s),
                             vec(rstd.get(), DType::kF32, s.m), env.stream, opt));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<double> got;
  KESTREL_RETURN_IF_ERROR(download_floats(y, s.t, &got));
  judge(s.t, got, want.y, s.n, "y", out);
  if (residual) {
    KESTREL_RETURN_IF_ERROR(download_floats(h, s.t, &got));
    judge(s.t, got, x, s.n, "h", out);
  }
  KESTREL_RETURN_IF_ERROR(download_floats(rstd, DType::kF32, &got));
  judge(DType::kF32, got, want.rstd, s.m, "rstd", out);
  return Status::Ok();
}

Status bench_rmsnorm_fwd(const Params& p, const OpEnv& env, BenchCase* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const bool weighted = p.text("weight") == "yes", residual = p.text("residual") == "yes";
  const bool with_rstd = p.text("rstd") == "yes";
  const double row = s.elems() * s.es();
  out->work.bytes = row * (residual ? 4 : 2) + (weighted ? double(s.n) * s.es() : 0) +
                    (with_rstd ? s.m * 4.0 : 0.0);
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  struct State {
    SlottedBuffer x, r, w, y, h, rstd;
  };
  auto st = std::make_shared<State>();
  const int64_t count = s.m * s.n;
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->x, count, s.t, slots, 1));
  KESTREL_RETURN_IF_ERROR(st->y.allocate(size_t(row), slots));
  KESTREL_RETURN_IF_ERROR(st->rstd.allocate(size_t(s.m) * 4, slots));
  if (residual) {
    KESTREL_RETURN_IF_ERROR(fill_floats(&st->r, count, s.t, slots, 2));
    KESTREL_RETURN_IF_ERROR(st->h.allocate(size_t(row), slots));
  }
  if (weighted) KESTREL_RETURN_IF_ERROR(fill_floats(&st->w, s.n, s.t, slots, 3, 0.5));
  const MaybeConfig cfg = read_config(p);
  return finish_case(
      out, s, residual ? Streams{2, 2} : Streams{1, 1},
      label(s, p,
            std::string(residual ? " +residual" : "") + (weighted ? "" : " no-weight") +
                (with_rstd ? "" : " no-rstd")),
      slots, [st, s, weighted, residual, with_rstd, cfg](cudaStream_t stream, int k) {
        RmsNormOptions opt;
        opt.config = cfg.get();
        const TensorView w = weighted ? vec(st->w.at(k), s.t, s.n) : TensorView{};
        const TensorView rstd = with_rstd ? vec(st->rstd.at(k), DType::kF32, s.m) : TensorView{};
        if (residual)
          return rmsnorm_fwd_residual(rows(st->x.at(k), s), rows(st->r.at(k), s), w,
                                      rows(st->y.at(k), s), rows(st->h.at(k), s), rstd, stream,
                                      opt);
        return rmsnorm_fwd(rows(st->x.at(k), s), w, rows(st->y.at(k), s), rstd, stream, opt);
      });
}

// ---- rmsnorm_bwd ----

Status check_rmsnorm_bwd(const Params& p, const OpEnv& env, CheckReport* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const bool weighted = p.text("weight") == "yes";
  const uint64_t seed = uint64_t(p.integer("seed"));
  std::vector<double> x, dy, w;
  DeviceBuffer dx_in, ddy, dw, drstd, dx, dweight;
  KESTREL_RETURN_IF_ERROR(upload_bytes(&dx_in, random_floats(s.m * s.n, s.t, seed, &x)));
  KESTREL_RETURN_IF_ERROR(upload_bytes(&ddy, random_floats(s.m * s.n, s.t, seed + 1, &dy)));
  if (weighted) {
    KESTREL_RETURN_IF_ERROR(upload_bytes(&dw, random_floats(s.n, s.t, seed + 2, &w, 0.5)));
    KESTREL_RETURN_IF_ERROR(poisoned(&dweight, size_t(s.n) * 4));
  }
  std::vector<double> rstd =
      ref::rmsnorm_fwd(x.data(), weighted ? w.data() : nullptr, s.m, s.n, 1e-6).rstd;
  for (double& r : rstd) r = double(float(r));  // what the GPU reads
  KESTREL_RETURN_IF_ERROR(upload_f32(&drstd, rstd));
  KESTREL_RETURN_IF_ERROR(poisoned(&dx, size_t(s.elems()) * s.es()));
  const auto want =
      ref::rmsnorm_bwd(dy.data(), x.data(), weighted ? w.data() : nullptr, rstd.data(), s.m, s.n);
  RmsNormOptions opt;
  const MaybeConfig cfg = read_config(p);
  opt.config = cfg.get();
  KESTREL_RETURN_IF_ERROR(rmsnorm_bwd(
      rows(ddy.get(), s), rows(dx_in.get(), s), weighted ? vec(dw.get(), s.t, s.n) : TensorView{},
      vec(drstd.get(), DType::kF32, s.m), rows(dx.get(), s),
      weighted ? vec(dweight.get(), DType::kF32, s.n) : TensorView{}, env.stream, opt));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<double> got;
  KESTREL_RETURN_IF_ERROR(download_floats(dx, s.t, &got));
  judge(s.t, got, want.dx, s.n, "dx", out);
  if (weighted) {
    KESTREL_RETURN_IF_ERROR(download_floats(dweight, DType::kF32, &got));
    judge(DType::kF32, got, want.dweight, s.n, "dweight", out);
  }
  return Status::Ok();
}

Status bench_rmsnorm_bwd(const Params& p, const OpEnv& env, BenchCase* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const bool weighted = p.text("weight") == "yes";
  const double row = s.elems() * s.es();
  out->work.bytes = 3 * row + s.m * 4.0 + (weighted ? double(s.n) * (s.es() + 4) : 0);
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  struct State {
    SlottedBuffer dy, x, w, rstd, dx, dweight;
  };
  auto st = std::make_shared<State>();
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->dy, s.m * s.n, s.t, slots, 1));
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->x, s.m * s.n, s.t, slots, 2));
  KESTREL_RETURN_IF_ERROR(st->dx.allocate(size_t(row), slots));
  // rstd of unit-variance rows is about 1.
  std::vector<uint8_t> ones(size_t(std::min<int64_t>(s.m, 1 << 20)) * 4);
  const float one = 1.0f;
  for (size_t i = 0; i < ones.size(); i += 4)
    std::copy_n(reinterpret_cast<const uint8_t*>(&one), 4, &ones[i]);
  KESTREL_RETURN_IF_ERROR(fill_repeating(&st->rstd, size_t(s.m) * 4, slots, ones));
  if (weighted) {
    KESTREL_RETURN_IF_ERROR(fill_floats(&st->w, s.n, s.t, slots, 3, 0.5));
    KESTREL_RETURN_IF_ERROR(st->dweight.allocate(size_t(s.n) * 4, slots));
  }
  const MaybeConfig cfg = read_config(p);
  return finish_case(out, s, Streams{2, 1}, label(s, p, weighted ? "" : " no-weight"), slots,
                     [st, s, weighted, cfg](cudaStream_t stream, int k) {
                       RmsNormOptions opt;
                       opt.config = cfg.get();
                       return rmsnorm_bwd(
                           rows(st->dy.at(k), s), rows(st->x.at(k), s),
                           weighted ? vec(st->w.at(k), s.t, s.n) : TensorView{},
                           vec(st->rstd.at(k), DType::kF32, s.m), rows(st->dx.at(k), s),
                           weighted ? vec(st->dweight.at(k), DType::kF32, s.n) : TensorView{},
                           stream, opt);
                     });
}

// ---- softmax_fwd / softmax_bwd ----

Status check_softmax(const Params& p, const OpEnv& env, CheckReport* out, bool backward) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const uint64_t seed = uint64_t(p.integer("seed"));
  const MaybeConfig cfg = read_config(p);
  std::vector<double> x, y, dy, got;
  DeviceBuffer a, b, o;
  KESTREL_RETURN_IF_ERROR(poisoned(&o, size_t(s.elems()) * s.es()));
  const auto bytes = random_floats(s.m * s.n, s.t, seed, &x, 3.0);
  if (!backward) {
    KESTREL_RETURN_IF_ERROR(upload_bytes(&a, bytes));
    KESTREL_RETURN_IF_ERROR(softmax_fwd(rows(a.get(), s), rows(o.get(), s), env.stream, cfg.get()));
    KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
    KESTREL_RETURN_IF_ERROR(download_floats(o, s.t, &got));
    judge(s.t, got, ref::softmax_fwd(x.data(), s.m, s.n), s.n, "y", out);
    return Status::Ok();
  }
  const auto y_bytes = encode_floats(ref::softmax_fwd(x.data(), s.m, s.n), s.t, &y);
  KESTREL_RETURN_IF_ERROR(upload_bytes(&a, random_floats(s.m * s.n, s.t, seed + 1, &dy)));
  KESTREL_RETURN_IF_ERROR(upload_bytes(&b, y_bytes));
  KESTREL_RETURN_IF_ERROR(
      softmax_bwd(rows(a.get(), s), rows(b.get(), s), rows(o.get(), s), env.stream, cfg.get()));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  KESTREL_RETURN_IF_ERROR(download_floats(o, s.t, &got));
  judge(s.t, got, ref::softmax_bwd(dy.data(), y.data(), s.m, s.n), s.n, "dx", out);
  return Status::Ok();
}

Status bench_softmax(const Params& p, const OpEnv& env, BenchCase* out, bool backward) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const double row = s.elems() * s.es();
  out->work.bytes = row * (backward ? 3 : 2);
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  struct State {
    SlottedBuffer a, b, o;
  };
  auto st = std::make_shared<State>();
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->a, s.m * s.n, s.t, slots, 1));
  if (backward) KESTREL_RETURN_IF_ERROR(fill_floats(&st->b, s.m * s.n, s.t, slots, 2, 1e-3));
  KESTREL_RETURN_IF_ERROR(st->o.allocate(size_t(row), slots));
  const MaybeConfig cfg = read_config(p);
  return finish_case(out, s, Streams{backward ? 2 : 1, 1}, label(s, p), slots,
                     [st, s, backward, cfg](cudaStream_t stream, int k) {
                       if (backward)
                         return softmax_bwd(rows(st->a.at(k), s), rows(st->b.at(k), s),
                                            rows(st->o.at(k), s), stream, cfg.get());
                       return softmax_fwd(rows(st->a.at(k), s), rows(st->o.at(k), s), stream,
                                          cfg.get());
                     });
}

// ---- cross_entropy_fwd / cross_entropy_bwd ----

CrossEntropyOptions xent_options(const Params& p, const MaybeConfig& cfg) {
  CrossEntropyOptions opt;
  opt.reduction = reduction_of(p);
  opt.label_smoothing = float(p.real("smoothing"));
  opt.config = cfg.get();
  return opt;
}

// cross_entropy_bwd mean: given the forward's total_weight, as torch's
// autograd gives its backward, or counting the targets again.
bool xent_total_weight(const Params& p, bool backward) {
  return backward && reduction_of(p) == Reduction::kMean && p.text("total_weight") == "yes";
}

Status check_xent(const Params& p, const OpEnv& env, CheckReport* out, bool backward) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const uint64_t seed = uint64_t(p.integer("seed"));
  const MaybeConfig cfg = read_config(p);
  CrossEntropyOptions opt = xent_options(p, cfg);
  const int64_t loss_len = opt.reduction == Reduction::kNone ? s.m : 1;
  std::vector<double> x, got;
  const auto target = testing::random_targets(s.m, s.n, seed + 1, -100, 7);
  DeviceBuffer dl, dt, lse, loss, dx;
  KESTREL_RETURN_IF_ERROR(upload_bytes(&dl, random_floats(s.m * s.n, s.t, seed, &x, 2.0)));
  const auto* tb = reinterpret_cast<const uint8_t*>(target.data());
  KESTREL_RETURN_IF_ERROR(upload_bytes(&dt, std::vector<uint8_t>(tb, tb + target.size() * 8)));
  const auto fwd = ref::cross_entropy_fwd(x.data(), target.data(), s.m, s.n, opt.ignore_index,
                                          opt.label_smoothing, ref_reduction(opt.reduction));
  const TensorView tv = vec(dt.get(), DType::kI64, s.m);
  if (!backward) {
    KESTREL_RETURN_IF_ERROR(poisoned(&lse, size_t(s.m) * 4));
    KESTREL_RETURN_IF_ERROR(poisoned(&loss, size_t(loss_len) * 4));
    KESTREL_RETURN_IF_ERROR(cross_entropy_fwd(rows(dl.get(), s), tv,
                                              vec(loss.get(), DType::kF32, loss_len),
                                              vec(lse.get(), DType::kF32, s.m), env.stream, opt));
    KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
    KESTREL_RETURN_IF_ERROR(download_floats(lse, DType::kF32, &got));
    judge(DType::kF32, got, fwd.lse, s.m, "lse", out);
    KESTREL_RETURN_IF_ERROR(download_floats(loss, DType::kF32, &got));
    judge(DType::kF32, got, fwd.loss, loss_len, "loss", out);
    return Status::Ok();
  }
  std::vector<double> lse_f32(fwd.lse.begin(), fwd.lse.end()), dloss(size_t(loss_len), 0.75);
  for (double& v : lse_f32) v = double(float(v));  // what the GPU reads
  KESTREL_RETURN_IF_ERROR(upload_f32(&lse, lse_f32));
  KESTREL_RETURN_IF_ERROR(upload_f32(&loss, dloss));
  KESTREL_RETURN_IF_ERROR(poisoned(&dx, size_t(s.elems()) * s.es()));
  DeviceBuffer total_weight;
  if (xent_total_weight(p, true)) {
    KESTREL_RETURN_IF_ERROR(upload_f32(&total_weight, {kept_rows(target, opt.ignore_index)}));
    opt.total_weight = vec(total_weight.get(), DType::kF32, 1);
  }
  KESTREL_RETURN_IF_ERROR(cross_entropy_bwd(vec(loss.get(), DType::kF32, loss_len),
                                            rows(dl.get(), s), tv, vec(lse.get(), DType::kF32, s.m),
                                            rows(dx.get(), s), env.stream, opt));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  KESTREL_RETURN_IF_ERROR(download_floats(dx, s.t, &got));
  judge(s.t, got,
        ref::cross_entropy_bwd(dloss.data(), x.data(), target.data(), lse_f32.data(), s.m, s.n,
                               opt.ignore_index, opt.label_smoothing, ref_reduction(opt.reduction)),
        s.n, "dlogits", out);
  return Status::Ok();
}

Status bench_xent(const Params& p, const OpEnv& env, BenchCase* out, bool backward) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const MaybeConfig cfg = read_config(p);
  const CrossEntropyOptions opt = xent_options(p, cfg);
  const bool with_total_weight = xent_total_weight(p, backward);
  const int64_t loss_len = opt.reduction == Reduction::kNone ? s.m : 1;
  const double row = s.elems() * s.es();
  // Logits, targets and lse (written or read), the losses; dlogits backward.
  out->work.bytes = row * (backward ? 2 : 1) + s.m * 12.0 + loss_len * 4.0;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  struct State {
    SlottedBuffer logits, target, lse, loss, dx, total_weight;
  };
  auto st = std::make_shared<State>();
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->logits, s.m * s.n, s.t, slots, 1, 2.0));
  float kept = 0.0f;
  KESTREL_RETURN_IF_ERROR(fill_targets(&st->target, s, slots, &kept));
  if (with_total_weight) {
    KESTREL_RETURN_IF_ERROR(st->total_weight.allocate(4, slots));
    KESTREL_RETURN_IF_ERROR(st->total_weight.upload_all(&kept, 4));
  }
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->lse, s.m, DType::kF32, slots, 2, 0.1));
  KESTREL_RETURN_IF_ERROR(fill_floats(&st->loss, loss_len, DType::kF32, slots, 3, 0.1));
  if (backward) KESTREL_RETURN_IF_ERROR(st->dx.allocate(size_t(row), slots));
  const std::string extra = " " + p.text("reduction") +
                            (opt.label_smoothing != 0 ? " ls" + p.text("smoothing") : "") +
                            (backward && opt.reduction == Reduction::kMean && !with_total_weight
                                 ? " counted"
                                 : "");
  return finish_case(out, s, Streams{1, backward ? 1 : 0}, label(s, p, extra), slots,
                     [st, s, opt, cfg, loss_len, backward, with_total_weight](cudaStream_t stream,
                                                                              int k) {
                       CrossEntropyOptions o = opt;
                       o.config = cfg.get();  // this closure's copy, not bench_xent's
                       if (with_total_weight)
                         o.total_weight = vec(st->total_weight.at(k), DType::kF32, 1);
                       const TensorView target = vec(st->target.at(k), DType::kI64, s.m);
                       const TensorView lse = vec(st->lse.at(k), DType::kF32, s.m);
                       const TensorView loss = vec(st->loss.at(k), DType::kF32, loss_len);
                       if (backward)
                         return cross_entropy_bwd(loss, rows(st->logits.at(k), s), target, lse,
                                                  rows(st->dx.at(k), s), stream, o);
                       return cross_entropy_fwd(rows(st->logits.at(k), s), target, loss, lse,
                                                stream, o);
                     });
}

// The plan of a call with these parameters as the ops make it for the
// bench's dense rows from a 16-byte boundary (rmsnorm_bwd takes no shifted
// path); the weight here has the rows' dtype.
Status plan_of(RowwiseOp op, const Params& p, ops::RowPlan* plan, ops::RowVariant* variant,
               Shape* s) {
  KESTREL_RETURN_IF_ERROR(read_shape(p, s));
  const MaybeConfig c = read_config(p);
  const bool rmsnorm = op == RowwiseOp::kRmsNormFwd || op == RowwiseOp::kRmsNormBwd;
  *variant = {op == RowwiseOp::kRmsNormFwd && p.text("residual") == "yes",
              rmsnorm && p.text("weight") == "yes", s->t};
  variant->smoothing = p.values().count("smoothing") && p.real("smoothing") != 0.0;
  const TensorView rows = TensorView::dense(reinterpret_cast<void*>(256), s->t, {s->m, s->n});
  return ops::plan_rows(op, s->m, s->n, s->t, c.get(),
                        ops::row_access({rows}, op != RowwiseOp::kRmsNormBwd), plan, *variant);
}

// The row kernel a call with these parameters runs, for `kestrel tune` to
// compile ahead (OpInfo::kernels).
std::function<std::vector<rt::KernelSpec>(const Params&)> kernels_of(RowwiseOp op) {
  return [op](const Params& p) -> std::vector<rt::KernelSpec> {
    ops::RowPlan plan;
    ops::RowVariant variant;
    Shape s;
    if (!plan_of(op, p, &plan, &variant, &s).ok()) return {};
    return {ops::rowwise_kernel_spec(op, s.t, plan, variant)};
  };
}

// The tuning table's entry for these parameters (OpInfo::tuned_entry).
auto tuned_entry_of(RowwiseOp op) {
  return [op](const Params& p, double us, double heuristic_us, ops::TuningTable* table,
              std::string* saved) -> Status {
    ops::RowPlan plan;
    ops::RowVariant variant;
    Shape s;
    KESTREL_RETURN_IF_ERROR(plan_of(op, p, &plan, &variant, &s));
    const rt::DeviceInfo* dev = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
    ops::RowwiseTuned e;
    e.key = {dev->name, op, s.t, s.n, plan.access, variant.tuning_variant()};
    e.config = plan.cfg;
    e.us = us;
    e.heuristic_us = heuristic_us;
    e.tuned_m = s.m;
    table->put(e);
    *saved = std::string(rowwise_op_name(op)) + " " + dtype_name(s.t) + " n=" +
             std::to_string(s.n) + " " + ops::row_access_name(plan.access) +
             (e.key.variant.empty() ? "" : " " + e.key.variant) + ": " + plan.cfg.describe();
    return Status::Ok();
  };
}

// The op's configurations for rows of the given n and dtype (`kestrel tune`).
std::function<std::vector<std::map<std::string, std::string>>(const Params&)> configs_of(
    RowwiseOp op) {
  return [op](const Params& p) {
    std::vector<std::map<std::string, std::string>> out;
    for (const RowwiseConfig& c :
         rowwise_config_space(op, p.integer("n"), float_dtype(p.text("dtype")))) {
      std::map<std::string, std::string> m{{"threads", std::to_string(c.threads)},
                                           {"tpr", std::to_string(c.threads_per_row)},
                                           {"cluster", std::to_string(c.cluster)}};
      if (op == RowwiseOp::kRmsNormBwd) m["l2_group"] = c.l2_group ? "1" : "0";
      if (op == RowwiseOp::kRmsNormFwd || op == RowwiseOp::kSoftmaxFwd ||
          op == RowwiseOp::kRmsNormBwd)
        m["rpt"] = std::to_string(c.rows_per_thread);
      out.push_back(m);
    }
    return out;
  };
}

}  // namespace

void register_rowwise_ops(OpRegistry& reg) {
  const auto common = [](std::initializer_list<ParamSpec> more) {
    std::vector<ParamSpec> v = {
        {"m", ParamKind::kInt, "4096", "rows", {}},
        {"n", ParamKind::kInt, "4096", "row length (1 .. 262144)", {}},
        {"dtype", ParamKind::kChoice, "bf16", "dtype of the row tensors", float_dtype_names()},
        {"threads", ParamKind::kInt, "0", "CTA size (0: heuristic)", {}},
        {"tpr", ParamKind::kInt, "0", "threads per row (0: heuristic)", {}},
        {"cluster", ParamKind::kInt, "0", "CTAs per row (0: heuristic)", {}},
        {"seed", ParamKind::kInt, "1", "random data seed (check)", {}}};
    v.insert(v.end(), more);
    return v;
  };
  const ParamSpec weight{"weight", ParamKind::kChoice, "yes", "with a weight", {"yes", "no"}};
  const ParamSpec reduction{
      "reduction", ParamKind::kChoice, "mean", "loss reduction", {"mean", "sum", "none"}};
  const ParamSpec smoothing{"smoothing", ParamKind::kFloat, "0", "label smoothing", {}};
  const ParamSpec total_weight{"total_weight",
                               ParamKind::kChoice,
                               "yes",
                               "mean: the forward's total_weight given (as torch's autograd "
                               "does), or the targets counted again (no)",
                               {"yes", "no"}};
  const ParamSpec rpt{"rpt", ParamKind::kInt, "0", "rows per thread (0: heuristic)", {}};
  reg.add({"rmsnorm_fwd", kFamily,
           "y = x * rstd * w, rstd[M] fp32 (optionally h = x + residual first); checked "
           "against the float64 reference",
           common({weight,
                   {"residual", ParamKind::kChoice, "no", "fused residual add", {"no", "yes"}},
                   {"rstd",
                    ParamKind::kChoice,
                    "yes",
                    "write rstd[M] (no: the inference form, y only)",
                    {"yes", "no"}},
                   rpt}),
           check_rmsnorm_fwd, bench_rmsnorm_fwd, configs_of(RowwiseOp::kRmsNormFwd),
           kernels_of(RowwiseOp::kRmsNormFwd), tuned_entry_of(RowwiseOp::kRmsNormFwd)});
  reg.add({"rmsnorm_bwd", kFamily,
           "dx and (deterministic, fp32) dweight of RMSNorm from dy, x, w, rstd",
           common({weight,
                   {"l2_group",
                    ParamKind::kInt,
                    "0",
                    "1: the row's `cluster` CTAs exchange through L2, not as a cluster",
                    {}},
                   rpt}),
           check_rmsnorm_bwd, bench_rmsnorm_bwd, configs_of(RowwiseOp::kRmsNormBwd),
           kernels_of(RowwiseOp::kRmsNormBwd), tuned_entry_of(RowwiseOp::kRmsNormBwd)});
  reg.add(
      {"softmax_fwd", kFamily, "y = softmax(x) along rows", common({rpt}),
       [](const Params& p, const OpEnv& e, CheckReport* o) {
         return check_softmax(p, e, o, false);
       },
       [](const Params& p, const OpEnv& e, BenchCase* o) { return bench_softmax(p, e, o, false); },
       configs_of(RowwiseOp::kSoftmaxFwd), kernels_of(RowwiseOp::kSoftmaxFwd),
       tuned_entry_of(RowwiseOp::kSoftmaxFwd)});
  reg.add(
      {"softmax_bwd", kFamily, "dx = y * (dy - sum(dy * y)) along rows", common({}),
       [](const Params& p, const OpEnv& e, CheckReport* o) { return check_softmax(p, e, o, true); },
       [](const Params& p, const OpEnv& e, BenchCase* o) { return bench_softmax(p, e, o, true); },
       configs_of(RowwiseOp::kSoftmaxBwd), kernels_of(RowwiseOp::kSoftmaxBwd),
       tuned_entry_of(RowwiseOp::kSoftmaxBwd)});
  reg.add(
      {"cross_entropy_fwd", kFamily,
       "loss (fp32, torch semantics) and lse[M] from logits[M][V] and int64 targets",
       common({reduction, smoothing}),
       [](const Params& p, const OpEnv& e, CheckReport* o) { return check_xent(p, e, o, false); },
       [](const Params& p, const OpEnv& e, BenchCase* o) { return bench_xent(p, e, o, false); },
       configs_of(RowwiseOp::kCrossEntropyFwd), kernels_of(RowwiseOp::kCrossEntropyFwd),
       tuned_entry_of(RowwiseOp::kCrossEntropyFwd)});
  reg.add(
      {"cross_entropy_bwd", kFamily, "dlogits from dloss, logits, targets and the saved lse",
       common({reduction, smoothing, total_weight}),
       [](const Params& p, const OpEnv& e, CheckReport* o) { return check_xent(p, e, o, true); },
       [](const Params& p, const OpEnv& e, BenchCase* o) { return bench_xent(p, e, o, true); },
       configs_of(RowwiseOp::kCrossEntropyBwd), kernels_of(RowwiseOp::kCrossEntropyBwd),
       tuned_entry_of(RowwiseOp::kCrossEntropyBwd)});
}

}  // namespace kestrel::bench
