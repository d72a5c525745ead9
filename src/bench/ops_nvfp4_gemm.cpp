// NVFP4 GEMM as a check/bench op. SOL uses the bf16 tensor-core rate (no FP4
// MMA on Hopper) and the FP4 bytes. Peer: cuBLAS bf16 GEMM on operands
// dequantized to bf16 once.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/host_tensors.h"
#include "bench/nvfp4_operands.h"
#include "device_buffer.h"
#include "kestrel/gemm.h"
#include "ops/gemm_common.h"
#include "ops/nvfp4_kernel_specs.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

struct GemmShape {
  int64_t m, n, k, l;
  ScaleLayout a_layout, b_layout;
  DType out;
};

// The operands' scale layouts and the output type (nvfp4_product_params).
void read_formats(const Params& p, ScaleLayout* a_layout, ScaleLayout* b_layout, DType* out) {
  *a_layout = layout_named(p.text("a_layout"));
  *b_layout = layout_named(p.text("b_layout"));
  *out = p.text("out") == "bf16" ? DType::kBF16 : DType::kF16;
}

Status read_shape(const Params& p, GemmShape* s) {
  s->m = p.integer("m");
  s->n = p.integer("n");
  s->k = p.integer("k");
  s->l = p.integer("l");
  read_formats(p, &s->a_layout, &s->b_layout, &s->out);
  if (s->m < 1 || s->n < 1 || s->l < 1)
    return Status::InvalidArgument("m, n, l: must be at least 1");
  if (s->k < 64 || s->k % 64 != 0)
    return Status::InvalidArgument("k: must be a positive multiple of 64, got " + p.text("k"));
  return Status::Ok();
}

// The weights packed once per rotation slot (pack_gemm_weights), for runs
// with packed=1; the unpacked slots stay as they are (the peer reads them).
struct PackedSlots {
  SlottedBuffer bytes;
  std::vector<GemmPackedWeights> views;

  Status pack(const SlottedOperand& w, int slots, cudaStream_t stream) {
    const int64_t per_slot = gemm_packed_weight_bytes(w.rows, w.k, w.l);
    KESTREL_RETURN_IF_ERROR(bytes.allocate(size_t(per_slot), slots));
    views.resize(size_t(slots));
    for (int i = 0; i < slots; ++i)
      KESTREL_RETURN_IF_ERROR(
          pack_gemm_weights(w.view(i), bytes.at(i), per_slot, stream, &views[size_t(i)]));
    KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream));
    return Status::Ok();
  }
};

std::string packed_suffix(const Params& p) { return p.integer("packed") ? " packed" : ""; }

bool read_config(const Params& p, GemmConfig* cfg) {
  if (p.integer("bn") == 0 && p.integer("stages") == 0 && p.integer("split") == 0 &&
      p.integer("consumers") == 0)
    return false;
  const GemmConfig d;
  cfg->block_n = p.integer("bn") ? int(p.integer("bn")) : d.block_n;
  cfg->stages = p.integer("stages") ? int(p.integer("stages")) : d.stages;
  cfg->split_k = p.integer("split") ? int(p.integer("split")) : d.split_k;
  cfg->split_l2 = p.integer("split_l2") != 0;
  cfg->k_tail = p.integer("tail") != 0;
  cfg->consumer_groups = p.integer("consumers") ? int(p.integer("consumers")) : d.consumer_groups;
  return true;
}

// Peer: cuBLAS bf16 GEMM of A (m x k) against `b` (cols x k), both
// dequantized to bf16 once, in enough copies to rotate past L2.
// `swiglu`: b is [B1; B2] (cols = 2N) and the peer finishes with the fused
// silu * mul into an N-column output, as a user of the unfused path would.
// `group_rows` (a grouped GEMM, L = 1): A's rows are the groups' one after
// another and b holds a weight per group, one GEMM per non-empty group.
Status add_cublas_peer(const std::string& name, const SlottedOperand& a, const SlottedOperand& b,
                       const GemmShape& s, int64_t cols, const OpEnv& env, BenchCase* out,
                       bool swiglu = false, const std::vector<int64_t>& group_rows = {}) {
  struct PeerState {
    SlottedBuffer a, b, c, swiglu_out;
  };
  auto ps = std::make_shared<PeerState>();
  const int slots = rotation_slots((a.l * a.rows + b.l * b.rows) * s.k * 2 + s.l * s.m * cols * 2,
                                   env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(dequantized_bf16(a, slots, env.stream, &ps->a));
  KESTREL_RETURN_IF_ERROR(dequantized_bf16(b, slots, env.stream, &ps->b));
  KESTREL_RETURN_IF_ERROR(ps->c.allocate(size_t(s.l * s.m * cols * 2), slots));
  if (swiglu) KESTREL_RETURN_IF_ERROR(ps->swiglu_out.allocate(size_t(s.l * s.m * cols), slots));
  Peers* peers = nullptr;
  KESTREL_RETURN_IF_ERROR(Peers::get(&peers));
  PeerLaunch cublas;
  cublas.name = name;
  cublas.call.slots = slots;
  cublas.call.fn = [ps, peers, s, cols, swiglu, group_rows](cudaStream_t stream, int slot) {
    if (group_rows.empty()) {
      KESTREL_RETURN_IF_ERROR(peers->gemm_bf16(stream, ps->a.at(slot), ps->b.at(slot),
                                               ps->c.at(slot), s.m, cols, s.k, s.l, DType::kBF16));
    } else {
      const auto* a = static_cast<const uint8_t*>(ps->a.at(slot));
      const auto* b = static_cast<const uint8_t*>(ps->b.at(slot));
      auto* c = static_cast<uint8_t*>(ps->c.at(slot));
      int64_t row = 0;
      for (size_t g = 0; g < group_rows.size(); row += group_rows[g], ++g)
        if (group_rows[g] > 0)
          KESTREL_RETURN_IF_ERROR(
              peers->gemm_bf16(stream, a + row * s.k * 2, b + int64_t(g) * cols * s.k * 2,
                               c + row * cols * 2, group_rows[g], cols, s.k, 1, DType::kBF16));
    }
    if (!swiglu) return Status::Ok();
    return launch_silu_mul(stream, ps->c.at(slot), ps->swiglu_out.at(slot), s.l * s.m, cols / 2);
  };
  out->peers.push_back(std::move(cublas));
  return Status::Ok();
}

// Once the op on `stream` is done: its output against the reference.
Status compare_output(const DeviceBuffer& c, size_t bytes, DType type,
                      const std::vector<double>& want, cudaStream_t stream, CheckReport* out) {
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream));
  std::vector<uint8_t> got(bytes);
  KESTREL_RETURN_IF_ERROR(c.download(got.data(), got.size()));
  const auto r = compare_floats(type, decode_floats(got, type), want);
  out->pass = r.pass;
  out->detail = r.to_string();
  return Status::Ok();
}

// A check's weights packed into a poisoned buffer (the pack must write its
// padding too).
Status pack_check_weights(const DeviceOperand& d, const ref::HostNvfp4& h, cudaStream_t stream,
                          DeviceBuffer* buf, GemmPackedWeights* w) {
  const int64_t bytes = gemm_packed_weight_bytes(h.rows, h.k, h.batches);
  KESTREL_RETURN_IF_ERROR(buf->allocate(size_t(bytes)));
  KESTREL_RETURN_IF_ERROR(buf->fill(testing::kPoison));
  return pack_gemm_weights(d.view(h), buf->get(), bytes, stream, w);
}

// Fresh data, the GPU op on a poisoned output, the float64 reference: the
// GEMM, or with `dual` the SwiGLU dual GEMM (a second weight, L = 1).
Status check_products(const Params& p, const OpEnv& env, CheckReport* out, bool dual) {
  GemmShape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  if (dual && s.l != 1) return Status::InvalidArgument("l: the dual GEMM check runs L = 1");
  const uint64_t seed = uint64_t(p.integer("seed"));
  const auto kind = dual ? testing::GpuModeData::kDual : testing::GpuModeData::kGemm;
  const auto a = check_operand(p.text("data"), kind, s.l, s.m, s.k, seed, s.a_layout);
  const auto b1 = check_operand(p.text("data"), kind, s.l, s.n, s.k, seed + 1, s.b_layout);
  const auto b2 = dual ? check_operand(p.text("data"), kind, 1, s.n, s.k, seed + 2, s.b_layout)
                       : ref::HostNvfp4{};
  const std::vector<double> want = dual ? ref::dual_gemm_nvfp4(a, b1, b2) : ref::gemm_nvfp4(a, b1);
  DeviceOperand da, db1, db2;
  KESTREL_RETURN_IF_ERROR(da.upload(a));
  KESTREL_RETURN_IF_ERROR(db1.upload(b1));
  if (dual) KESTREL_RETURN_IF_ERROR(db2.upload(b2));
  DeviceBuffer c;
  const size_t bytes = size_t(s.l * s.m * s.n * 2);
  KESTREL_RETURN_IF_ERROR(c.allocate(bytes));
  KESTREL_RETURN_IF_ERROR(c.fill(testing::kPoison));
  GemmConfig cfg;
  const GemmConfig* cfg_ptr = read_config(p, &cfg) ? &cfg : nullptr;
  const TensorView cv = TensorView::dense(c.get(), s.out, {s.l, s.m, s.n});
  if (p.integer("packed")) {
    DeviceBuffer pb1, pb2;
    GemmPackedWeights w1, w2;
    KESTREL_RETURN_IF_ERROR(pack_check_weights(db1, b1, env.stream, &pb1, &w1));
    if (dual) KESTREL_RETURN_IF_ERROR(pack_check_weights(db2, b2, env.stream, &pb2, &w2));
    KESTREL_RETURN_IF_ERROR(dual ? dual_gemm_nvfp4(da.view(a), w1, w2, cv, env.stream, cfg_ptr)
                                 : gemm_nvfp4(da.view(a), w1, cv, env.stream, cfg_ptr));
  } else {
    KESTREL_RETURN_IF_ERROR(
        dual ? dual_gemm_nvfp4(da.view(a), db1.view(b1), db2.view(b2), cv, env.stream, cfg_ptr)
             : gemm_nvfp4(da.view(a), db1.view(b1), cv, env.stream, cfg_ptr));
  }
  return compare_output(c, bytes, s.out, want, env.stream, out);
}

Status check_gemm(const Params& p, const OpEnv& env, CheckReport* out) {
  return check_products(p, env, out, false);
}
Status check_dual(const Params& p, const OpEnv& env, CheckReport* out) {
  return check_products(p, env, out, true);
}

Status bench_gemm(const Params& p, const OpEnv& env, BenchCase* out) {
  GemmShape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  struct State {
    SlottedOperand a, b;
    SlottedBuffer c;
    PackedSlots packed;
  };
  auto st = std::make_shared<State>();
  out->work.bytes = double(s.l * (s.m + s.n) * (s.k / 2 + s.k / 16) + s.l * s.m * s.n * 2);
  out->work.flops = 2.0 * double(s.l) * double(s.m) * double(s.n) * double(s.k);
  out->work.path = MmaPath::kBf16;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(st->a.fill(s.l, s.m, s.k, s.a_layout, slots, 21));
  KESTREL_RETURN_IF_ERROR(st->b.fill(s.l, s.n, s.k, s.b_layout, slots, 22));
  KESTREL_RETURN_IF_ERROR(st->c.allocate(size_t(s.l * s.m * s.n * 2), slots));
  const bool packed = p.integer("packed") != 0;
  if (packed) KESTREL_RETURN_IF_ERROR(st->packed.pack(st->b, slots, env.stream));
  GemmConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  out->shape = "M" + std::to_string(s.m) + " N" + std::to_string(s.n) + " K" + std::to_string(s.k) +
               (s.l > 1 ? " L" + std::to_string(s.l) : "") + packed_suffix(p) +
               (has_cfg ? " [" + cfg.describe() + "]" : "");
  out->launch.slots = slots;
  out->launch.fn = [st, s, cfg, has_cfg, packed](cudaStream_t stream, int slot) {
    const TensorView c = TensorView::dense(st->c.at(slot), s.out, {s.l, s.m, s.n});
    const GemmConfig* config = has_cfg ? &cfg : nullptr;
    return packed ? gemm_nvfp4(st->a.view(slot), st->packed.views[size_t(slot)], c, stream, config)
                  : gemm_nvfp4(st->a.view(slot), st->b.view(slot), c, stream, config);
  };

  return add_cublas_peer("cuBLAS bf16", st->a, st->b, s, s.n, env, out);
}

Status bench_dual(const Params& p, const OpEnv& env, BenchCase* out) {
  GemmShape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  struct State {
    SlottedOperand a, b1, b2;
    SlottedBuffer c;
    PackedSlots packed1, packed2;
  };
  auto st = std::make_shared<State>();
  out->work.bytes = double(s.l * (s.m + 2 * s.n) * (s.k / 2 + s.k / 16) + s.l * s.m * s.n * 2);
  out->work.flops = 4.0 * double(s.l) * double(s.m) * double(s.n) * double(s.k);
  out->work.path = MmaPath::kBf16;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(st->a.fill(s.l, s.m, s.k, s.a_layout, slots, 31));
  KESTREL_RETURN_IF_ERROR(st->b1.fill(s.l, s.n, s.k, s.b_layout, slots, 32));
  KESTREL_RETURN_IF_ERROR(st->b2.fill(s.l, s.n, s.k, s.b_layout, slots, 33));
  KESTREL_RETURN_IF_ERROR(st->c.allocate(size_t(s.l * s.m * s.n * 2), slots));
  const bool packed = p.integer("packed") != 0;
  if (packed) {
    KESTREL_RETURN_IF_ERROR(st->packed1.pack(st->b1, slots, env.stream));
    KESTREL_RETURN_IF_ERROR(st->packed2.pack(st->b2, slots, env.stream));
  }
  GemmConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  out->shape = "M" + std::to_string(s.m) + " N" + std::to_string(s.n) + " K" + std::to_string(s.k) +
               packed_suffix(p) + (has_cfg ? " [" + cfg.describe() + "]" : "");
  out->launch.slots = slots;
  out->launch.fn = [st, s, cfg, has_cfg, packed](cudaStream_t stream, int slot) {
    const TensorView c = TensorView::dense(st->c.at(slot), s.out, {s.l, s.m, s.n});
    const GemmConfig* config = has_cfg ? &cfg : nullptr;
    const size_t i = size_t(slot);
    return packed ? dual_gemm_nvfp4(st->a.view(slot), st->packed1.views[i], st->packed2.views[i], c,
                                    stream, config)
                  : dual_gemm_nvfp4(st->a.view(slot), st->b1.view(slot), st->b2.view(slot), c,
                                    stream, config);
  };
  // Peer: cuBLAS bf16 on A and [B1; B2] dequantized once (one GEMM of 2N
  // columns), then one fused silu * mul pass (the definition).
  SlottedOperand both;
  KESTREL_RETURN_IF_ERROR(both.fill(s.l, 2 * s.n, s.k, s.b_layout, 1, 34));
  return add_cublas_peer("cuBLAS bf16 [B1;B2] + silu*mul", st->a, both, s, 2 * s.n, env, out, true);
}

// The configuration overrides (read_config) and the weight packing of the
// GEMM-family ops.
std::vector<ParamSpec> config_and_packing_params() {
  return {config_param("bn", "config: tokens per CTA tile (0 = heuristic)"),
          config_param("stages", "config: pipeline stages (0 = heuristic)"),
          config_param("split", "config: CTAs splitting K (0 = heuristic)"),
          config_param("split_l2", "config: 1 = split-K partials through L2, not a cluster"),
          config_param("tail", "config: 1 = idle SMs take every tile's last K stages"),
          config_param("consumers", "config: consumer warpgroups, 2 or 3 (dual, no split)"),
          {"packed",
           ParamKind::kInt,
           "0",
           "1 = weights through pack_gemm_weights (packed once, before timing)",
           {}}};
}

// The grouped GEMM: groups' rows (the list "m"), shared N and K, plain or
// SwiGLU dual.
struct GroupedShape {
  std::vector<int64_t> rows;
  int64_t m = 0, n = 0, k = 0;
  ScaleLayout a_layout, b_layout;
  DType out;
  bool dual = false;
  int64_t groups() const { return int64_t(rows.size()); }
  // The rows' running sums: the group ends the op reads.
  std::vector<int32_t> ends() const {
    std::vector<int32_t> e;
    int64_t sum = 0;
    for (int64_t r : rows) e.push_back(int32_t(sum += r));
    return e;
  }
};

Status read_grouped_shape(const Params& p, GroupedShape* s) {
  s->rows = p.int_list("m");
  s->n = p.integer("n");
  s->k = p.integer("k");
  read_formats(p, &s->a_layout, &s->b_layout, &s->out);
  s->dual = p.integer("dual") != 0;
  if (s->rows.empty() || s->groups() > ops::kGemmMaxGroups)
    return Status::InvalidArgument("m: 1.." + std::to_string(ops::kGemmMaxGroups) +
                                   " groups' rows, got " + p.text("m"));
  s->m = 0;
  for (int64_t r : s->rows) {
    if (r < 0) return Status::InvalidArgument("m: group rows must be >= 0, got " + p.text("m"));
    s->m += r;
  }
  if (s->m < 1 || s->m > (int64_t(1) << 30) || s->n < 1)
    return Status::InvalidArgument("m, n: the rows must sum to 1..2^30 and n be at least 1");
  if (s->k < 64 || s->k % 64 != 0)
    return Status::InvalidArgument("k: must be a positive multiple of 64, got " + p.text("k"));
  return Status::Ok();
}

std::string grouped_label(const GroupedShape& s, const Params& p) {
  std::string label = (s.dual ? "dual G" : "G") + std::to_string(s.groups()) + " M" +
                      std::to_string(s.m) + " N" + std::to_string(s.n) + " K" + std::to_string(s.k);
  if (!p.text("name").empty()) label += " (" + p.text("name") + ")";
  return label + packed_suffix(p);
}

// Fresh data, the op on a poisoned output, the float64 reference (every
// group's rows against its own weight).
Status check_grouped(const Params& p, const OpEnv& env, CheckReport* out) {
  GroupedShape s;
  KESTREL_RETURN_IF_ERROR(read_grouped_shape(p, &s));
  const uint64_t seed = uint64_t(p.integer("seed"));
  const auto kind = testing::GpuModeData::kGrouped;
  const int64_t g = s.groups();
  const auto a = check_operand(p.text("data"), kind, 1, s.m, s.k, seed, s.a_layout);
  const auto b1 = check_operand(p.text("data"), kind, g, s.n, s.k, seed + 1, s.b_layout);
  const auto b2 = s.dual ? check_operand(p.text("data"), kind, g, s.n, s.k, seed + 2, s.b_layout)
                         : ref::HostNvfp4{};
  const std::vector<double> xa = ref::dequantize_nvfp4(a), x1 = ref::dequantize_nvfp4(b1),
                            x2 = s.dual ? ref::dequantize_nvfp4(b2) : std::vector<double>{};
  std::vector<double> want(size_t(s.m * s.n));
  int64_t row = 0;
  for (int64_t gi = 0; gi < g; ++gi)
    for (int64_t r = 0; r < s.rows[size_t(gi)]; ++r, ++row)
      for (int64_t n = 0; n < s.n; ++n) {
        const double* x = xa.data() + row * s.k;
        const size_t w = size_t((gi * s.n + n) * s.k);
        double s1 = 0, s2 = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          s1 += x[k] * x1[w + size_t(k)];
          if (s.dual) s2 += x[k] * x2[w + size_t(k)];
        }
        want[size_t(row * s.n + n)] = s.dual ? s1 / (1.0 + std::exp(-s1)) * s2 : s1;
      }
  DeviceOperand da, db1, db2;
  KESTREL_RETURN_IF_ERROR(da.upload(a));
  KESTREL_RETURN_IF_ERROR(db1.upload(b1));
  if (s.dual) KESTREL_RETURN_IF_ERROR(db2.upload(b2));
  const std::vector<int32_t> ends = s.ends();
  DeviceBuffer ends_dev, c;
  KESTREL_RETURN_IF_ERROR(ends_dev.allocate(ends.size() * sizeof(int32_t)));
  KESTREL_RETURN_IF_ERROR(ends_dev.upload(ends.data(), ends.size() * sizeof(int32_t)));
  const size_t bytes = size_t(s.m * s.n * 2);
  KESTREL_RETURN_IF_ERROR(c.allocate(bytes));
  KESTREL_RETURN_IF_ERROR(c.fill(testing::kPoison));
  GemmConfig cfg;
  const GemmConfig* cfg_ptr = read_config(p, &cfg) ? &cfg : nullptr;
  const TensorView cv = TensorView::dense(c.get(), s.out, {s.m, s.n});
  const GemmGroups groups{static_cast<const int32_t*>(ends_dev.get()), g};
  if (p.integer("packed")) {
    DeviceBuffer pb1, pb2;
    GemmPackedWeights w1, w2;
    KESTREL_RETURN_IF_ERROR(pack_check_weights(db1, b1, env.stream, &pb1, &w1));
    if (s.dual) KESTREL_RETURN_IF_ERROR(pack_check_weights(db2, b2, env.stream, &pb2, &w2));
    KESTREL_RETURN_IF_ERROR(
        s.dual ? grouped_dual_gemm_nvfp4(da.view(a), w1, w2, groups, cv, env.stream, cfg_ptr)
               : grouped_gemm_nvfp4(da.view(a), w1, groups, cv, env.stream, cfg_ptr));
  } else {
    KESTREL_RETURN_IF_ERROR(
        s.dual ? grouped_dual_gemm_nvfp4(da.view(a), db1.view(b1), db2.view(b2), groups, cv,
                                         env.stream, cfg_ptr)
               : grouped_gemm_nvfp4(da.view(a), db1.view(b1), groups, cv, env.stream, cfg_ptr));
  }
  return compare_output(c, bytes, s.out, want, env.stream, out);
}

Status bench_grouped(const Params& p, const OpEnv& env, BenchCase* out) {
  GroupedShape s;
  KESTREL_RETURN_IF_ERROR(read_grouped_shape(p, &s));
  const int64_t g = s.groups(), weights = s.dual ? 2 : 1;
  struct State {
    SlottedOperand a, b1, b2;
    SlottedBuffer c, ends;
    PackedSlots packed1, packed2;
  };
  auto st = std::make_shared<State>();
  out->work.bytes = double((s.m + weights * g * s.n) * (s.k / 2 + s.k / 16) + s.m * s.n * 2);
  out->work.flops = 2.0 * double(weights) * double(s.m) * double(s.n) * double(s.k);
  out->work.path = MmaPath::kBf16;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(st->a.fill(1, s.m, s.k, s.a_layout, slots, 41));
  KESTREL_RETURN_IF_ERROR(st->b1.fill(g, s.n, s.k, s.b_layout, slots, 42));
  if (s.dual) KESTREL_RETURN_IF_ERROR(st->b2.fill(g, s.n, s.k, s.b_layout, slots, 43));
  KESTREL_RETURN_IF_ERROR(st->c.allocate(size_t(s.m * s.n * 2), slots));
  const std::vector<int32_t> ends = s.ends();
  KESTREL_RETURN_IF_ERROR(st->ends.allocate(ends.size() * sizeof(int32_t), 1));
  KESTREL_RETURN_IF_ERROR(st->ends.upload_all(ends.data(), ends.size() * sizeof(int32_t)));
  const bool packed = p.integer("packed") != 0;
  if (packed) {
    KESTREL_RETURN_IF_ERROR(st->packed1.pack(st->b1, slots, env.stream));
    if (s.dual) KESTREL_RETURN_IF_ERROR(st->packed2.pack(st->b2, slots, env.stream));
  }
  GemmConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  out->shape = grouped_label(s, p) + (has_cfg ? " [" + cfg.describe() + "]" : "");
  out->launch.slots = slots;
  out->launch.fn = [st, s, cfg, has_cfg, packed, g](cudaStream_t stream, int slot) {
    const TensorView c = TensorView::dense(st->c.at(slot), s.out, {s.m, s.n});
    const GemmConfig* config = has_cfg ? &cfg : nullptr;
    const GemmGroups groups{static_cast<const int32_t*>(st->ends.at(0)), g};
    const size_t i = size_t(slot);
    if (s.dual)
      return packed ? grouped_dual_gemm_nvfp4(st->a.view(slot), st->packed1.views[i],
                                              st->packed2.views[i], groups, c, stream, config)
                    : grouped_dual_gemm_nvfp4(st->a.view(slot), st->b1.view(slot),
                                              st->b2.view(slot), groups, c, stream, config);
    return packed
               ? grouped_gemm_nvfp4(st->a.view(slot), st->packed1.views[i], groups, c, stream,
                                    config)
               : grouped_gemm_nvfp4(st->a.view(slot), st->b1.view(slot), groups, c, stream, config);
  };

  // Peer: what a user without a grouped kernel runs, one cuBLAS bf16 GEMM
  // per group on operands dequantized once (dual: on the group's [B1; B2],
  // then one silu * mul pass over all rows).
  const GemmShape peer_shape{s.m, s.n, s.k, 1, s.a_layout, s.b_layout, s.out};
  if (!s.dual)
    return add_cublas_peer("cuBLAS bf16 per group", st->a, st->b1, peer_shape, s.n, env, out, false,
                           s.rows);
  SlottedOperand both;
  KESTREL_RETURN_IF_ERROR(both.fill(g, 2 * s.n, s.k, s.b_layout, 1, 44));
  return add_cublas_peer("cuBLAS bf16 per group [B1;B2] + silu*mul", st->a, both, peer_shape,
                         2 * s.n, env, out, true, s.rows);
}

std::vector<ParamSpec> grouped_params() {
  std::vector<ParamSpec> v = {
      {"m",
       ParamKind::kIntList,
       "80,176,128,72,64,248,96,160",
       "rows (tokens) of each group, comma-separated",
       {}},
      {"n", ParamKind::kInt, "4096", "rows of each group's weight", {}},
      {"k", ParamKind::kInt, "7168", "reduction size (a multiple of 64)", {}},
      {"dual", ParamKind::kInt, "0", "1 = the SwiGLU dual GEMM per group (B1, B2)", {}},
      {"name",
       ParamKind::kChoice,
       "",
       "the seed workload's name (a label)",
       {"", "deep_k", "wide_n", "mid", "short_k"}}};
  for (auto& q : nvfp4_product_params("grouped")) v.push_back(q);
  for (auto& q : config_and_packing_params()) v.push_back(q);
  return v;
}

// Shape, operand and configuration parameters of the GEMM-family ops.
std::vector<ParamSpec> product_params(const char* m, const char* n, const char* k,
                                      const char* n_help, const char* generator) {
  std::vector<ParamSpec> v = {{"m", ParamKind::kInt, m, "rows of A (tokens)", {}},
                              {"n", ParamKind::kInt, n, n_help, {}},
                              {"k", ParamKind::kInt, k, "reduction size (a multiple of 64)", {}},
                              {"l", ParamKind::kInt, "1", "batches (L)", {}}};
  for (auto& q : nvfp4_product_params(generator)) v.push_back(q);
  for (auto& q : config_and_packing_params()) v.push_back(q);
  return v;
}

// The space of `kestrel tune gemm|dual_gemm`: gemm_config_space(), each K
// split without a tail both over a cluster and through L2 (a split whose
// clusters do not fit in one wave, as at M128 N4096 K7168's split 4, is
// only fast through L2).
std::function<std::vector<std::map<std::string, std::string>>(const Params&)> gemm_configs(
    bool dual) {
  return [dual](const Params&) {
    std::vector<std::map<std::string, std::string>> out;
    for (const GemmConfig& c : gemm_config_space(dual)) {
      std::map<std::string, std::string> cfg = {
          {"bn", std::to_string(c.block_n)},    {"stages", std::to_string(c.stages)},
          {"split", std::to_string(c.split_k)}, {"split_l2", "0"},
          {"tail", c.k_tail ? "1" : "0"},       {"consumers", std::to_string(c.consumer_groups)}};
      out.push_back(cfg);
      if (c.split_k > 1 && !c.k_tail) {
        cfg["split_l2"] = "1";
        out.push_back(cfg);
      }
    }
    return out;
  };
}

// Whether the kernel reads blocked weight scales: packed weights carry
// linear ones (ops::packed_weight_view).
bool weights_blocked(const GemmShape& s, bool packed) {
  return !packed && s.b_layout == ScaleLayout::kBlocked;
}

// The GEMM kernel of a configuration, for `kestrel tune` to compile ahead
// (OpInfo::kernels; best effort: the op may still shrink a K split that does
// not fit in one wave, whose kernel then compiles at its launch). A cluster
// split and an L2 split are both compiled, as the op may take either.
std::function<std::vector<rt::KernelSpec>(const Params&)> gemm_kernels(bool dual) {
  return [dual](const Params& p) -> std::vector<rt::KernelSpec> {
    GemmShape s;
    GemmConfig cfg;
    if (!read_shape(p, &s).ok() || !read_config(p, &cfg)) return {};
    const bool packed = p.integer("packed") != 0;
    const bool w_blocked = weights_blocked(s, packed);
    std::vector<rt::KernelSpec> out{ops::gemm_kernel_spec(s.out, cfg, w_blocked, dual, packed)};
    if (cfg.split_k > 1 && !cfg.k_tail) {
      cfg.split_l2 = !cfg.split_l2;
      out.push_back(ops::gemm_kernel_spec(s.out, cfg, w_blocked, dual, packed));
    }
    return out;
  };
}

// The tuning table's entry for these parameters (OpInfo::tuned_entry): the
// configuration the op runs with them (the one they name, or its own pick).
auto gemm_tuned_entry(bool dual) {
  return [dual](const Params& p, double us, double heuristic_us, ops::TuningTable* table,
                std::string* saved) -> Status {
    GemmShape s;
    KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
    const rt::DeviceInfo* dev = nullptr;
    KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
    const bool packed = p.integer("packed") != 0;
    const bool w_blocked = weights_blocked(s, packed);
    GemmConfig given;
    const bool has_given = read_config(p, &given);
    const GemmConfig heuristic = dual ? dual_gemm_default_config(s.m, s.n, s.k, s.l, dev->sm_count)
                                      : gemm_default_config(s.m, s.n, s.k, s.l, dev->sm_count);
    const ops::GemmShape shape{s.l, s.m, s.n, s.k, s.m * s.n, s.n};
    ops::GemmTuned e;
    KESTREL_RETURN_IF_ERROR(ops::resolve_gemm_config(has_given ? &given : nullptr, heuristic, shape,
                                                     s.out, w_blocked, dual, packed, &e.config));
    e.key = {dev->name, dual, s.m, s.n, s.k, s.l, packed, w_blocked};
    e.us = us;
    e.heuristic_us = heuristic_us;
    table->put(e);
    *saved = std::string(dual ? "dual_gemm" : "gemm") + " M" + std::to_string(s.m) + " N" +
             std::to_string(s.n) + " K" + std::to_string(s.k) + (packed ? " packed" : "") + ": " +
             e.config.describe();
    return Status::Ok();
  };
}

// The space of `kestrel tune grouped_gemm`: every tile width and depth
// that fits beside the group table (split_k 1: no K split for groups).
std::function<std::vector<std::map<std::string, std::string>>(const Params&)> grouped_configs() {
  return [](const Params& p) {
    std::vector<std::map<std::string, std::string>> out;
    GroupedShape s;
    if (!read_grouped_shape(p, &s).ok()) return out;
    const bool packed = p.integer("packed") != 0;
    for (int bn : gemm_block_n_choices())
      for (int stages = 2; stages <= 8; ++stages)
        if (ops::grouped_gemm_smem_bytes(bn, stages, packed, 2, s.groups()) <= ops::kGemmSmemLimit)
          out.push_back({{"bn", std::to_string(bn)}, {"stages", std::to_string(stages)}});
    return out;
  };
}

// The grouped kernel of a configuration (or of the heuristic's pick).
std::vector<rt::KernelSpec> grouped_kernels(const Params& p) {
  GroupedShape s;
  if (!read_grouped_shape(p, &s).ok()) return {};
  const bool packed = p.integer("packed") != 0;
  GemmConfig cfg;
  if (!read_config(p, &cfg)) {
    cfg = grouped_gemm_default_config(s.m, s.groups());
    if (packed) cfg.stages = ops::gemm_default_stages(cfg.block_n, false, true);
  }
  return {ops::gemm_kernel_spec(s.out, cfg, !packed && s.b_layout == ScaleLayout::kBlocked, s.dual,
                                packed, true)};
}

}  // namespace

void register_nvfp4_gemm_ops(OpRegistry& reg) {
  reg.add({"gemm", "nvfp4_gemm",
           "C[l][m][n] = sum_k A[l][m][k] * B[l][n][k], A (activations) and B (weights) NVFP4, "
           "fp16/bf16 out; checked against the float64 reference",
           product_params("128", "7168", "16384", "rows of B (weights)", "GEMM"), check_gemm,
           bench_gemm, gemm_configs(false), gemm_kernels(false), gemm_tuned_entry(false)});
  reg.add({"dual_gemm", "nvfp4_dual_gemm",
           "C = silu(A B1^T) * (A B2^T), A, B1, B2 NVFP4 (the SwiGLU up-projection, fused), "
           "fp16/bf16 out; checked against the float64 reference",
           product_params("256", "4096", "7168", "rows of B1 and B2", "dual"), check_dual,
           bench_dual, gemm_configs(true), gemm_kernels(true), gemm_tuned_entry(true)});
  reg.add({"grouped_gemm", "nvfp4_grouped_gemm",
           "C[r][n] = sum_k A[r][k] * B[g][n][k] for the rows r of group g (mixture-of-experts), "
           "A and B NVFP4, one launch; dual=1: silu(A B1[g]^T) * (A B2[g]^T); checked against "
           "the float64 reference",
           grouped_params(), check_grouped, bench_grouped, grouped_configs(), grouped_kernels});
}

}  // namespace kestrel::bench
