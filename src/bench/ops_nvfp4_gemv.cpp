// NVFP4 batched GEMV as a check/bench op. Memory-bound: SOL is the bytes of A,
// its scales, B and c over the copy bandwidth. Peers: cuBLAS bf16 GEMV on A
// dequantized to bf16 once (what a PyTorch user on Hopper runs today), a
// device memcpy of the same bytes, and a kernel that only reads them.
#include <memory>
#include <string>
#include <vector>

#include "bench/host_tensors.h"
#include "bench/nvfp4_operands.h"
#include "device_buffer.h"
#include "kestrel/gemv.h"
#include "ops/nvfp4_kernel_specs.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

struct GemvShape {
  int64_t m, k, l;
  ScaleLayout a_layout, b_layout;
  DType out;
};

Status read_shape(const Params& p, GemvShape* s) {
  s->m = p.integer("m");
  s->k = p.integer("k");
  s->l = p.integer("l");
  s->a_layout = layout_named(p.text("a_layout"));
  s->b_layout = layout_named(p.text("b_layout"));
  s->out = p.text("out") == "bf16" ? DType::kBF16 : DType::kF16;
  if (s->m < 1) return Status::InvalidArgument("m: must be at least 1, got " + p.text("m"));
  if (s->k < 16 || s->k % 16 != 0)
    return Status::InvalidArgument("k: must be a positive multiple of 16, got " + p.text("k"));
  if (s->l < 1) return Status::InvalidArgument("l: must be at least 1, got " + p.text("l"));
  if (p.integer("ring") != 0 && p.integer("ring") != 1)
    return Status::InvalidArgument("ring: must be 0 (registers) or 1, got " + p.text("ring"));
  return Status::Ok();
}

// The configuration named by stages (wgmma kernel) or rt/warps/cluster/depth/
// ring (register kernel), or none (heuristic) when all are 0.
bool read_config(const Params& p, GemvConfig* cfg) {
  if (p.integer("stages") != 0) {
    cfg->stages = int(p.integer("stages"));
    if (p.integer("ctas_per_sm") != 0) cfg->ctas_per_sm = int(p.integer("ctas_per_sm"));
    cfg->chunks_per_item = int(p.integer("chunks_per_item"));
    return true;
  }
  if (p.integer("rt") == 0 && p.integer("warps") == 0 && p.integer("cluster") == 0 &&
      p.integer("depth") == 0 && p.integer("ring") == 0)
    return false;
  GemvConfig d;
  d.kernel = GemvKernel::kRegister;
  cfg->kernel = GemvKernel::kRegister;
  cfg->row_tiles = p.integer("rt") ? int(p.integer("rt")) : d.row_tiles;
  cfg->warps = p.integer("warps") ? int(p.integer("warps")) : d.warps;
  cfg->cluster = p.integer("cluster") ? int(p.integer("cluster")) : d.cluster;
  cfg->depth = p.integer("depth") ? int(p.integer("depth")) : d.depth;
  cfg->ring = p.integer("ring") != 0;
  return true;
}

Status check_gemv(const Params& p, const OpEnv& env, CheckReport* out) {
  GemvShape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const uint64_t seed = uint64_t(p.integer("seed"));
  const auto kind = testing::GpuModeData::kGemv;
  const auto a = check_operand(p.text("data"), kind, s.l, s.m, s.k, seed, s.a_layout);
  const auto b = check_operand(p.text("data"), kind, s.l, 1, s.k, seed + 1, s.b_layout);
  const std::vector<double> want = ref::gemv_nvfp4(a, b);

  DeviceOperand da, db;
  KESTREL_RETURN_IF_ERROR(da.upload(a));
  KESTREL_RETURN_IF_ERROR(db.upload(b));
  DeviceBuffer c;
  KESTREL_RETURN_IF_ERROR(c.allocate(size_t(s.l * s.m * 2)));
  KESTREL_RETURN_IF_ERROR(c.fill(testing::kPoison));
  GemvConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  KESTREL_RETURN_IF_ERROR(gemv_nvfp4(da.view(a), db.view(b),
                                     TensorView::dense(c.get(), s.out, {s.l, s.m}), env.stream,
                                     has_cfg ? &cfg : nullptr));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<uint8_t> got(size_t(s.l * s.m * 2));
  KESTREL_RETURN_IF_ERROR(c.download(got.data(), got.size()));
  const auto r = compare_floats(s.out, decode_floats(got, s.out), want);
  out->pass = r.pass;
  out->detail = r.to_string();
  return Status::Ok();
}

Status bench_gemv(const Params& p, const OpEnv& env, BenchCase* out) {
  GemvShape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  struct State {
    SlottedOperand a, b;
    SlottedBuffer c;
  };
  auto st = std::make_shared<State>();
  const int64_t essential = s.l * s.m * (s.k / 2 + s.k / 16) + s.l * (s.k / 2 + s.k / 16);
  out->work.bytes = double(essential + s.l * s.m * 2);
  out->work.flops = 2.0 * double(s.l * s.m * s.k);
  out->work.path = MmaPath::kBf16;
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(st->a.fill(s.l, s.m, s.k, s.a_layout, slots, 11));
  KESTREL_RETURN_IF_ERROR(st->b.fill(s.l, 1, s.k, s.b_layout, slots, 12));
  KESTREL_RETURN_IF_ERROR(st->c.allocate(size_t(s.l * s.m * 2), slots));

  GemvConfig cfg;
  const bool has_cfg = read_config(p, &cfg);
  out->shape = "M" + std::to_string(s.m) + " K" + std::to_string(s.k) + " L" + std::to_string(s.l) +
               " " + p.text("a_layout") + (has_cfg ? " [" + cfg.describe() + "]" : "");
  out->launch.slots = slots;
  out->launch.fn = [st, s, cfg, has_cfg](cudaStream_t stream, int slot) {
    return gemv_nvfp4(st->a.view(slot), st->b.view(slot),
                      TensorView::dense(st->c.at(slot), s.out, {s.l, s.m}), stream,
                      has_cfg ? &cfg : nullptr);
  };

  // Peer: cuBLAS bf16 GEMV on A and B dequantized once.
  struct PeerState {
    SlottedBuffer a, x, c;
  };
  auto ps = std::make_shared<PeerState>();
  const int peer_slots = rotation_slots(s.l * s.m * s.k * 2, env.device->l2_bytes);
  KESTREL_RETURN_IF_ERROR(dequantized_bf16(st->a, peer_slots, env.stream, &ps->a));
  KESTREL_RETURN_IF_ERROR(dequantized_bf16(st->b, peer_slots, env.stream, &ps->x));
  KESTREL_RETURN_IF_ERROR(ps->c.allocate(size_t(s.l * s.m * 2), peer_slots));
  Peers* peers = nullptr;
  KESTREL_RETURN_IF_ERROR(Peers::get(&peers));
  PeerLaunch cublas;
  cublas.name = "cuBLAS bf16";
  cublas.call.slots = peer_slots;
  cublas.call.fn = [ps, peers, s](cudaStream_t stream, int slot) {
    return peers->gemv_bf16(stream, ps->a.at(slot), ps->x.at(slot), ps->c.at(slot), s.m, s.k, s.l,
                            DType::kBF16);
  };
  out->peers.push_back(std::move(cublas));
  // Peer: a device memcpy moving the same bytes, at this size. Its time over
  // the SOL is what launch, ramp and tail cost a memory-bound call this short
  // (a fit over the seeds gave both GEMV kernels a fixed 11 us).
  PeerLaunch copy;
  KESTREL_RETURN_IF_ERROR(make_copy_peer(int64_t(out->work.bytes), slots, &copy));
  out->peers.push_back(std::move(copy));
  // Peer: a kernel that only reads the same bytes: the floor for any GEMV of
  // this size, launch and ramp included (BENCHMARKS.md, session 10: 24.5 /
  // 44.8 / 14.2 us on the seeds, against SOL 22.0 / 44.1 / 11.0).
  PeerLaunch read;
  KESTREL_RETURN_IF_ERROR(make_read_peer(int64_t(out->work.bytes), slots, &read));
  out->peers.push_back(std::move(read));
  return Status::Ok();
}

// The GEMV kernel of a configuration, for `kestrel tune` to compile ahead
// (OpInfo::kernels). The bench's A is 16-byte aligned; its linear scales
// pair up where rows and batches hold an even number of them (the op's rule).
std::vector<rt::KernelSpec> gemv_kernels(const Params& p) {
  GemvShape s;
  GemvConfig cfg;
  if (!read_shape(p, &s).ok() || !read_config(p, &cfg)) return {};
  const bool a_blk = s.a_layout == ScaleLayout::kBlocked;
  const bool b_blk = s.b_layout == ScaleLayout::kBlocked;
  if (cfg.kernel == GemvKernel::kWgmma)
    return {ops::gemv_wgmma_kernel_spec(s.out, cfg, a_blk, b_blk)};
  const int64_t scales_per_row = s.k / 16;
  const bool scale_pair = a_blk || (scales_per_row % 2 == 0 && (s.m * scales_per_row) % 2 == 0);
  return {ops::gemv_kernel_spec(s.out, cfg, a_blk, b_blk, true, scale_pair)};
}

}  // namespace

void register_nvfp4_gemv_ops(OpRegistry& reg) {
  const auto with = [](std::vector<ParamSpec> v, const std::vector<ParamSpec>& more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  reg.add({"gemv", "nvfp4_gemv",
           "c[l][m] = sum_k A[l][m][k] * B[l][k], A and B NVFP4, fp16/bf16 out; checked against "
           "the float64 reference (GPU MODE rule)",
           with(
               with(
                   {
                       {"m", ParamKind::kInt, "7168", "rows of A", {}},
                       {"k", ParamKind::kInt, "16384", "values per row (a multiple of 16)", {}},
                       {"l", ParamKind::kInt, "1", "batches (L)", {}},
                   },
                   nvfp4_product_params("GEMV")),
               {config_param("stages",
                             "config: wgmma kernel, stages in the TMA ring (0 = heuristic)"),
                config_param("ctas_per_sm",
                             "config: wgmma kernel, register budget for 1 or 2 CTAs per SM"),
                config_param(
                    "chunks_per_item",
                    "config: wgmma kernel, 512-value chunks per work item (0 = heuristic)"),
                config_param("rt", "config: register kernel, 16-row tiles per CTA (0 = heuristic)"),
                config_param("warps", "config: warps per CTA (0 = heuristic)"),
                config_param("cluster", "config: CTAs splitting K (0 = heuristic)"),
                config_param("depth", "config: groups in flight per lane (0 = heuristic)"),
                config_param("ring",
                             "config: register kernel, A through a cp.async ring in shared memory "
                             "(1) or registers (0)")}),
           check_gemv, bench_gemv,
           [](const Params&) {
             std::vector<std::map<std::string, std::string>> out;
             for (const GemvConfig& c : gemv_config_space())
               if (c.kernel == GemvKernel::kWgmma)
                 out.push_back({{"stages", std::to_string(c.stages)},
                                {"ctas_per_sm", std::to_string(c.ctas_per_sm)},
                                {"chunks_per_item", std::to_string(c.chunks_per_item)}});
               else
                 out.push_back({{"rt", std::to_string(c.row_tiles)},
                                {"warps", std::to_string(c.warps)},
                                {"cluster", std::to_string(c.cluster)},
                                {"depth", std::to_string(c.depth)},
                                {"ring", c.ring ? "1" : "0"}});
             return out;
           },
           gemv_kernels});
}

}  // namespace kestrel::bench
