// FP8 GEMM + fused add as a check/bench op. SOL uses the fp8 tensor-core
// rate and the bytes of A, B, R and D. Peers: cuBLASLt e4m3 with its own
// fused add (beta = 1, C = R), and without the add (the GEMM alone).
#include <memory>
#include <string>
#include <vector>

#include "bench/device_memory.h"
#include "bench/host_tensors.h"
#include "bench/op_registry.h"
#include "device_buffer.h"
#include "kestrel/fp8_gemm.h"
#include "ops/fp8_gemm_kernel.h"
#include "random.h"
#include "reference/binary16.h"
#include "reference/reference.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

struct Fp8Shape {
  int64_t m, n, k, l;
  bool add;
  float alpha;
};

Status read_shape(const Params& p, Fp8Shape* s) {
  s->m = p.integer("m");
  s->n = p.integer("n");
  s->k = p.integer("k");
  s->l = p.integer("l");
  s->add = p.integer("add") != 0;
  s->alpha = float(p.real("alpha"));
  if (s->m < 1 || s->n < 1 || s->l < 1)
    return Status::InvalidArgument("m, n, l: must be at least 1");
  if (s->k < 16 || s->k % 16 != 0)
    return Status::InvalidArgument("k: must be a positive multiple of 16, got " + p.text("k"));
  return Status::Ok();
}

bool read_config(const Params& p, Fp8GemmConfig* cfg) {
  if (p.integer("bn") == 0 && p.integer("stages") == 0 && p.integer("raster") == 0 &&
      p.integer("tail") == 0 && p.integer("consumers") == 0)
    return false;
  const Fp8GemmConfig d;
  cfg->block_n = p.integer("bn") ? int(p.integer("bn")) : d.block_n;
  cfg->consumer_groups = p.integer("consumers") ? int(p.integer("consumers")) : d.consumer_groups;
  cfg->stages = p.integer("stages") ? int(p.integer("stages"))
                                    : ops::fp8_gemm_max_stages(cfg->consumer_groups, cfg->block_n);
  cfg->raster_rows = p.integer("raster") ? int(p.integer("raster")) : d.raster_rows;
  cfg->tail_split = p.integer("tail") ? int(p.integer("tail")) : d.tail_split;
  return true;
}

TensorView view3(void* data, DType t, int64_t l, int64_t rows, int64_t cols) {
  return TensorView::dense(data, t, {l, rows, cols});
}

// Fresh data, the op on a poisoned D, the float64 reference per batch.
Status check_fp8(const Params& p, const OpEnv& env, CheckReport* out) {
  Fp8Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const uint64_t seed = uint64_t(p.integer("seed"));
  const auto a = testing::random_e4m3(s.l * s.m * s.k, seed);
  const auto b = testing::random_e4m3(s.l * s.n * s.k, seed + 1);
  // Without the add the reference adds zeros (bf16(x) + 0 = bf16(x)).
  const auto r = s.add ? testing::random_bf16(s.l * s.m * s.n, seed + 2, 4.0)
                       : std::vector<uint16_t>(size_t(s.l * s.m * s.n), 0);
  std::vector<double> want, acc, acc_abs;
  for (int64_t l = 0; l < s.l; ++l) {
    const auto ref = ref::fp8_gemm_add(&a[size_t(l * s.m * s.k)], &b[size_t(l * s.n * s.k)],
                                       &r[size_t(l * s.m * s.n)], s.m, s.n, s.k, s.alpha);
    for (uint16_t bits : ref.d_bf16) want.push_back(ref::bf16_value(bits));
    acc.insert(acc.end(), ref.acc.begin(), ref.acc.end());
    acc_abs.insert(acc_abs.end(), ref.acc_abs.begin(), ref.acc_abs.end());
  }
  DeviceBuffer da, db, dr, dd;
  KESTREL_RETURN_IF_ERROR(da.allocate(a.size()));
  KESTREL_RETURN_IF_ERROR(da.upload(a.data(), a.size()));
  KESTREL_RETURN_IF_ERROR(db.allocate(b.size()));
  KESTREL_RETURN_IF_ERROR(db.upload(b.data(), b.size()));
  KESTREL_RETURN_IF_ERROR(dr.allocate(r.size() * 2));
  KESTREL_RETURN_IF_ERROR(dr.upload(r.data(), r.size() * 2));
  KESTREL_RETURN_IF_ERROR(dd.allocate(r.size() * 2));
  KESTREL_RETURN_IF_ERROR(dd.fill(testing::kPoison));
  Fp8GemmConfig cfg;
  const Fp8GemmConfig* cfg_ptr = read_config(p, &cfg) ? &cfg : nullptr;
  const TensorView rv = view3(dr.get(), DType::kBF16, s.l, s.m, s.n);
  KESTREL_RETURN_IF_ERROR(
      fp8_gemm_add(view3(da.get(), DType::kE4M3, s.l, s.m, s.k),
                   view3(db.get(), DType::kE4M3, s.l, s.n, s.k), s.alpha, s.add ? &rv : nullptr,
                   view3(dd.get(), DType::kBF16, s.l, s.m, s.n), env.stream, cfg_ptr));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<uint8_t> got(r.size() * 2);
  KESTREL_RETURN_IF_ERROR(dd.download(got.data(), got.size()));
  const auto report =
      testing::compare_fp8_gemm_add(decode_floats(got, DType::kBF16), want, acc, acc_abs);
  out->pass = report.pass;
  out->detail = report.to_string();
  return Status::Ok();
}

Status bench_fp8(const Params& p, const OpEnv& env, BenchCase* out) {
  Fp8Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  struct State {
    SlottedBuffer a, b, r, d, peer_d;
  };
  auto st = std::make_shared<State>();
  const int64_t a_bytes = s.l * s.m * s.k, b_bytes = s.l * s.n * s.k, d_bytes = s.l * s.m * s.n * 2;
  out->work.bytes = double(a_bytes + b_bytes + d_bytes * (s.add ? 2 : 1));
  out->work.flops = 2.0 * double(s.l) * double(s.m) * double(s.n) * double(s.k);
  out->work.path = MmaPath::kFp8;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(st->a.allocate(size_t(a_bytes), slots));
  KESTREL_RETURN_IF_ERROR(st->b.allocate(size_t(b_bytes), slots));
  KESTREL_RETURN_IF_ERROR(st->r.allocate(size_t(d_bytes), slots));
  KESTREL_RETURN_IF_ERROR(st->d.allocate(size_t(d_bytes), slots));
  KESTREL_RETURN_IF_ERROR(st->peer_d.allocate(size_t(d_bytes), slots));
  const auto ha = timing_e4m3(a_bytes, 31), hb = timing_e4m3(b_bytes, 32);
  const auto hr = encode_floats(timing_data(s.l * s.m * s.n, 33), DType::kBF16, nullptr);
  KESTREL_RETURN_IF_ERROR(st->a.upload_all(ha.data(), ha.size()));
  KESTREL_RETURN_IF_ERROR(st->b.upload_all(hb.data(), hb.size()));
  KESTREL_RETURN_IF_ERROR(st->r.upload_all(hr.data(), hr.size()));
  Fp8GemmConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  out->shape = "M" + std::to_string(s.m) + " N" + std::to_string(s.n) + " K" + std::to_string(s.k) +
               (s.l > 1 ? " L" + std::to_string(s.l) : "") + (s.add ? " +R" : "") +
               (has_cfg ? " [" + cfg.describe() + "]" : "");
  out->launch.slots = slots;
  out->launch.fn = [st, s, cfg, has_cfg](cudaStream_t stream, int slot) {
    const TensorView rv = view3(st->r.at(slot), DType::kBF16, s.l, s.m, s.n);
    return fp8_gemm_add(view3(st->a.at(slot), DType::kE4M3, s.l, s.m, s.k),
                        view3(st->b.at(slot), DType::kE4M3, s.l, s.n, s.k), s.alpha,
                        s.add ? &rv : nullptr, view3(st->d.at(slot), DType::kBF16, s.l, s.m, s.n),
                        stream, has_cfg ? &cfg : nullptr);
  };

  Peers* peers = nullptr;
  KESTREL_RETURN_IF_ERROR(Peers::get(&peers));
  // One cuBLASLt call per batch (its plans are single-batch).
  auto lt = [st, s, peers](bool add) {
    return [st, s, peers, add](cudaStream_t stream, int slot) {
      for (int64_t l = 0; l < s.l; ++l) {
        const auto at = [&](const SlottedBuffer& buf, int64_t per_batch) {
          return static_cast<uint8_t*>(buf.at(slot)) + l * per_batch;
        };
        KESTREL_RETURN_IF_ERROR(peers->gemm_fp8(stream, at(st->a, s.m * s.k), at(st->b, s.n * s.k),
                                                at(st->peer_d, s.m * s.n * 2), s.m, s.n, s.k,
                                                s.alpha, add ? at(st->r, s.m * s.n * 2) : nullptr));
      }
      return Status::Ok();
    };
  };
  if (s.add) out->peers.push_back({"cuBLASLt fp8 +R", {lt(true), slots}});
  out->peers.push_back({"cuBLASLt fp8 (no add)", {lt(false), slots}});
  return Status::Ok();
}

std::vector<std::map<std::string, std::string>> fp8_configs(const Params&) {
  std::vector<std::map<std::string, std::string>> out;
  for (const Fp8GemmConfig& c : fp8_gemm_config_space())
    out.push_back({{"bn", std::to_string(c.block_n)},
                   {"stages", std::to_string(c.stages)},
                   {"raster", std::to_string(c.raster_rows)},
                   {"tail", std::to_string(c.tail_split)},
                   {"consumers", std::to_string(c.consumer_groups)}});
  return out;
}

std::vector<rt::KernelSpec> fp8_kernels(const Params& p) {
  Fp8Shape s;
  if (!read_shape(p, &s).ok()) return {};
  Fp8GemmConfig cfg;
  if (!read_config(p, &cfg)) {
    const rt::DeviceInfo* dev = nullptr;
    if (!rt::current_device(&dev).ok()) return {};
    cfg = fp8_gemm_default_config(s.m, s.n, s.k, s.l, dev->sm_count);
  }
  return {ops::fp8_gemm_kernel_spec(cfg, s.add)};
}

}  // namespace

void register_fp8_gemm_ops(OpRegistry& reg) {
  reg.add(
      {"fp8_gemm_add",
       "fp8_gemm",
       "D[l][m][n] = bf16(bf16(alpha * sum_k A[l][m][k] * B[l][n][k]) + R[l][m][n]), A and B "
       "e4m3 (K-major), R and D bf16; add=0: no R; checked against the float64 reference",
       {{"m", ParamKind::kInt, "8192", "rows of A and D", {}},
        {"n", ParamKind::kInt, "8192", "rows of B, columns of D (a multiple of 8)", {}},
        {"k", ParamKind::kInt, "8192", "reduction size (a multiple of 16)", {}},
        {"l", ParamKind::kInt, "1", "batches (L)", {}},
        {"add", ParamKind::kInt, "1", "1 = add R (bf16 [L][M][N]), 0 = D = bf16(alpha A B^T)", {}},
        {"alpha", ParamKind::kFloat, "0.5", "the product of the operands' scales", {}},
        {"seed", ParamKind::kInt, "1", "check: random data seed", {}},
        {"bn", ParamKind::kInt, "0", "config: columns of a tile, 64/128/192 (0: heuristic)", {}},
        {"stages", ParamKind::kInt, "0", "config: pipeline depth (0: the deepest that fits)", {}},
        {"raster", ParamKind::kInt, "0", "config: row tiles per raster group (0: default 8)", {}},
        {"tail",
         ParamKind::kInt,
         "0",
         "config: K parts of each tile of a last, partial wave, at most (0: default 1, none)",
         {}},
        {"consumers",
         ParamKind::kInt,
         "0",
         "config: consumer warpgroups, 64 tile rows each: 2, or 1 (0: default 2)",
         {}}},
       check_fp8,
       bench_fp8,
       fp8_configs,
       fp8_kernels});
}

}  // namespace kestrel::bench
