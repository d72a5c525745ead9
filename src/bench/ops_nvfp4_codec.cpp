// NVFP4 quantize, dequantize and scale-layout conversion as bench/check ops.
// All three are memory-bound: SOL is their essential bytes (each input read
// once, each output written once; blocked-layout padding not counted) over the
// copy bandwidth, and the peer is a device memcpy moving the same bytes.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/device_memory.h"
#include "bench/host_tensors.h"
#include "bench/op_registry.h"
#include "compare.h"
#include "device_buffer.h"
#include "kestrel/nvfp4.h"
#include "random.h"
#include "reference/reference.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

constexpr const char* kFamily = "nvfp4_codec";

struct Shape {
  int64_t l = 1, rows = 0, k = 0;
  int64_t count() const { return l * rows * k; }
  int64_t scale_count() const { return l * rows * (k / 16); }
};

Status read_shape(const Params& p, Shape* s) {
  s->rows = p.integer("m");
  s->k = p.integer("k");
  s->l = p.integer("l");
  if (s->rows < 1) return Status::InvalidArgument("m: must be at least 1, got " + p.text("m"));
  if (s->k < 16 || s->k % 16 != 0)
    return Status::InvalidArgument("k: must be a positive multiple of 16, got " + p.text("k"));
  if (s->l < 1) return Status::InvalidArgument("l: must be at least 1, got " + p.text("l"));
  return Status::Ok();
}

ScaleLayout layout_of(const std::string& name) {
  return name == "blocked" ? ScaleLayout::kBlocked : ScaleLayout::kLinear;
}

int64_t scale_bytes(const Shape& s, ScaleLayout layout) {
  return layout == ScaleLayout::kLinear ? s.scale_count() : blocked_scale_bytes(s.rows, s.k, s.l);
}

TensorView dense_view(void* p, DType t, const Shape& s) {
  return TensorView::dense(p, t, {s.l, s.rows, s.k});
}

TensorView scales_view(void* p, const Shape& s, ScaleLayout layout) {
  return layout == ScaleLayout::kLinear
             ? TensorView::dense(p, DType::kE4M3, {s.l, s.rows, s.k / 16})
             : TensorView::dense(p, DType::kE4M3, {blocked_scale_bytes(s.rows, s.k, s.l)});
}

Nvfp4View nvfp4_view(void* values, void* scales, const Shape& s, ScaleLayout layout, float gs) {
  Nvfp4View v;
  v.values = TensorView::dense(values, DType::kE2M1x2, {s.l, s.rows, s.k / 2});
  v.scales = scales_view(scales, s, layout);
  v.layout = layout;
  v.global_scale = gs;
  return v;
}

std::string shape_label(const Shape& s) {
  return (s.l > 1 ? std::to_string(s.l) + "x" : "") + std::to_string(s.rows) + "x" +
         std::to_string(s.k);
}

// "[l][row][k]" of flat element `i` of an L x rows x `cols` tensor.
std::string position(int64_t i, int64_t rows, int64_t cols) {
  if (i < 0) return "";
  return " (at [" + std::to_string(i / (rows * cols)) + "][" + std::to_string(i / cols % rows) +
         "][" + std::to_string(i % cols) + "])";
}

template <typename T>
Status download(const DeviceBuffer& buf, std::vector<T>* out) {
  out->resize(buf.size() / sizeof(T));
  return buf.download(out->data(), out->size() * sizeof(T));
}

Status upload(DeviceBuffer* buf, const std::vector<uint8_t>& host) {
  KESTREL_RETURN_IF_ERROR(buf->allocate(host.size()));
  return buf->upload(host.data(), host.size());
}

Status poisoned(DeviceBuffer* buf, size_t bytes) {
  KESTREL_RETURN_IF_ERROR(buf->allocate(bytes));
  return buf->fill(testing::kPoison);
}

std::vector<ParamSpec> shape_params() {
  return {{"m", ParamKind::kInt, "8192", "rows per batch", {}},
          {"k", ParamKind::kInt, "8192", "values per row (a multiple of 16)", {}},
          {"l", ParamKind::kInt, "1", "batches (L)", {}}};
}

ParamSpec dtype_param(const std::string& help) {
  return {"dtype", ParamKind::kChoice, "bf16", help, float_dtype_names()};
}

ParamSpec layout_param(const std::string& name, const std::string& help) {
  return {name, ParamKind::kChoice, "linear", help, {"linear", "blocked"}};
}

ParamSpec seed_param() { return {"seed", ParamKind::kInt, "1", "random data seed", {}}; }

// ---- quantize ----

Status check_quantize(const Params& p, const OpEnv& env, CheckReport* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const DType t = float_dtype(p.text("dtype"));
  const ScaleLayout layout = layout_of(p.text("layout"));
  const float gs = float(p.real("global_scale"));
  std::vector<double> exact;
  const auto x_host =
      encode_floats(testing::random_normal(s.count(), uint64_t(p.integer("seed"))), t, &exact);
  const ref::HostNvfp4 want = ref::quantize_nvfp4(exact.data(), s.l, s.rows, s.k, gs, layout);

  DeviceBuffer x, values, scales;
  KESTREL_RETURN_IF_ERROR(upload(&x, x_host));
  KESTREL_RETURN_IF_ERROR(poisoned(&values, want.values.size()));
  KESTREL_RETURN_IF_ERROR(poisoned(&scales, want.scales.size()));
  KESTREL_RETURN_IF_ERROR(quantize_nvfp4(dense_view(x.get(), t, s),
                                         nvfp4_view(values.get(), scales.get(), s, layout, gs),
                                         env.stream));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<uint8_t> got_values, got_scales;
  KESTREL_RETURN_IF_ERROR(download(values, &got_values));
  KESTREL_RETURN_IF_ERROR(download(scales, &got_scales));
  const auto rv = testing::compare_exact(got_values, want.values);
  const auto rs = testing::compare_exact(got_scales, want.scales);
  out->pass = rv.pass && rs.pass;
  out->detail = "values: " + rv.to_string() + position(rv.first_bad, s.rows, s.k / 2) +
                "\nscales (" + p.text("layout") + "): " + rs.to_string() +
                (layout == ScaleLayout::kLinear ? position(rs.first_bad, s.rows, s.k / 16) : "");
  return Status::Ok();
}

Status bench_quantize(const Params& p, const OpEnv& env, BenchCase* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const DType t = float_dtype(p.text("dtype"));
  const ScaleLayout layout = layout_of(p.text("layout"));
  const float gs = float(p.real("global_scale"));
  out->work.bytes = double(s.count()) * dtype_size(t) + double(s.count()) / 2 + s.scale_count();
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);

  struct State {
    SlottedBuffer x, values, scales;
  };
  auto st = std::make_shared<State>();
  const auto x_host = encode_floats(timing_data(s.count(), 1), t, nullptr);
  KESTREL_RETURN_IF_ERROR(st->x.allocate(x_host.size(), slots));
  KESTREL_RETURN_IF_ERROR(st->x.upload_all(x_host.data(), x_host.size()));
  KESTREL_RETURN_IF_ERROR(st->values.allocate(size_t(s.count() / 2), slots));
  KESTREL_RETURN_IF_ERROR(st->scales.allocate(size_t(scale_bytes(s, layout)), slots));

  out->shape = shape_label(s) + " " + p.text("dtype") + " " + p.text("layout");
  out->launch.slots = slots;
  out->launch.fn = [st, s, t, layout, gs](cudaStream_t stream, int slot) {
    return quantize_nvfp4(dense_view(st->x.at(slot), t, s),
                          nvfp4_view(st->values.at(slot), st->scales.at(slot), s, layout, gs),
                          stream);
  };
  PeerLaunch copy;
  KESTREL_RETURN_IF_ERROR(make_copy_peer(int64_t(out->work.bytes), slots, &copy));
  out->peers.push_back(std::move(copy));
  return Status::Ok();
}

// ---- dequantize ----

Status check_dequantize(const Params& p, const OpEnv& env, CheckReport* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const DType t = float_dtype(p.text("dtype"));
  const ScaleLayout layout = layout_of(p.text("layout"));
  const uint64_t seed = uint64_t(p.integer("seed"));
  ref::HostNvfp4 in;
  if (p.text("data") == "realistic") {
    in = testing::realistic_nvfp4(s.l, s.rows, s.k, seed, layout);
  } else {
    in = testing::gpumode_nvfp4(testing::GpuModeData::kGemm, s.l, s.rows, s.k, seed);
    in.scales = ref::convert_scales(in.scales, ScaleLayout::kLinear, layout, s.rows, s.k, s.l);
    in.layout = layout;
  }
  const std::vector<double> want = ref::dequantize_nvfp4(in);

  DeviceBuffer values, scales, y;
  KESTREL_RETURN_IF_ERROR(upload(&values, in.values));
  KESTREL_RETURN_IF_ERROR(upload(&scales, in.scales));
  KESTREL_RETURN_IF_ERROR(poisoned(&y, size_t(s.count()) * size_t(dtype_size(t))));
  KESTREL_RETURN_IF_ERROR(
      dequantize_nvfp4(nvfp4_view(values.get(), scales.get(), s, layout, in.global_scale),
                       dense_view(y.get(), t, s), env.stream));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<uint8_t> got;
  KESTREL_RETURN_IF_ERROR(download(y, &got));
  const auto r = compare_floats(t, decode_floats(got, t), want);
  out->pass = r.pass;
  out->detail = r.to_string() + position(r.worst_index, s.rows, s.k);
  return Status::Ok();
}

Status bench_dequantize(const Params& p, const OpEnv& env, BenchCase* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const DType t = float_dtype(p.text("dtype"));
  const ScaleLayout layout = layout_of(p.text("layout"));
  out->work.bytes = double(s.count()) / 2 + s.scale_count() + double(s.count()) * dtype_size(t);
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);

  struct State {
    SlottedBuffer values, scales, y;
  };
  auto st = std::make_shared<State>();
  KESTREL_RETURN_IF_ERROR(st->values.allocate(size_t(s.count() / 2), slots));
  KESTREL_RETURN_IF_ERROR(st->scales.allocate(size_t(scale_bytes(s, layout)), slots));
  KESTREL_RETURN_IF_ERROR(st->y.allocate(size_t(s.count()) * size_t(dtype_size(t)), slots));
  // Realistic input: random bf16 data quantized on the GPU into every slot.
  {
    DeviceBuffer x;
    KESTREL_RETURN_IF_ERROR(
        upload(&x, encode_floats(timing_data(s.count(), 1), DType::kBF16, nullptr)));
    for (int slot = 0; slot < slots; ++slot)
      KESTREL_RETURN_IF_ERROR(quantize_nvfp4(
          dense_view(x.get(), DType::kBF16, s),
          nvfp4_view(st->values.at(slot), st->scales.at(slot), s, layout, 1.0f), env.stream));
    KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  }

  out->shape = shape_label(s) + " " + p.text("dtype") + " " + p.text("layout");
  out->launch.slots = slots;
  out->launch.fn = [st, s, t, layout](cudaStream_t stream, int slot) {
    return dequantize_nvfp4(nvfp4_view(st->values.at(slot), st->scales.at(slot), s, layout, 1.0f),
                            dense_view(st->y.at(slot), t, s), stream);
  };
  PeerLaunch copy;
  KESTREL_RETURN_IF_ERROR(make_copy_peer(int64_t(out->work.bytes), slots, &copy));
  out->peers.push_back(std::move(copy));
  return Status::Ok();
}

// ---- convert_scales ----

ScaleLayout other(ScaleLayout l) {
  return l == ScaleLayout::kLinear ? ScaleLayout::kBlocked : ScaleLayout::kLinear;
}

Status check_convert(const Params& p, const OpEnv& env, CheckReport* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const ScaleLayout from = layout_of(p.text("from")), to = other(from);
  // Any byte is a valid scale for a layout change; blocked padding is junk here.
  std::vector<uint8_t> src(size_t(scale_bytes(s, from)));
  testing::Rng rng(uint64_t(p.integer("seed")));
  for (uint8_t& b : src) b = uint8_t(rng.bits());
  const std::vector<uint8_t> want = ref::convert_scales(src, from, to, s.rows, s.k, s.l);

  DeviceBuffer d_src, d_dst;
  KESTREL_RETURN_IF_ERROR(upload(&d_src, src));
  KESTREL_RETURN_IF_ERROR(poisoned(&d_dst, want.size()));
  KESTREL_RETURN_IF_ERROR(convert_scale_layout(scales_view(d_src.get(), s, from), from,
                                               scales_view(d_dst.get(), s, to), to, s.rows, s.k,
                                               s.l, env.stream));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(env.stream));
  std::vector<uint8_t> got;
  KESTREL_RETURN_IF_ERROR(download(d_dst, &got));
  const auto r = testing::compare_exact(got, want);
  out->pass = r.pass;
  out->detail = std::string(scale_layout_name(from)) + " -> " + scale_layout_name(to) + ": " +
                r.to_string() +
                (to == ScaleLayout::kLinear ? position(r.first_bad, s.rows, s.k / 16) : "");
  return Status::Ok();
}

Status bench_convert(const Params& p, const OpEnv& env, BenchCase* out) {
  Shape s;
  KESTREL_RETURN_IF_ERROR(read_shape(p, &s));
  const ScaleLayout from = layout_of(p.text("from")), to = other(from);
  out->work.bytes = 2.0 * double(s.scale_count());
  const int slots = rotation_slots(int64_t(out->work.bytes), env.device->l2_bytes);

  struct State {
    SlottedBuffer src, dst;
  };
  auto st = std::make_shared<State>();
  std::vector<uint8_t> src(size_t(scale_bytes(s, from)));
  testing::Rng rng(1);
  for (uint8_t& b : src) b = uint8_t(rng.bits()) & 0x7E;  // finite, like real scales
  KESTREL_RETURN_IF_ERROR(st->src.allocate(src.size(), slots));
  KESTREL_RETURN_IF_ERROR(st->src.upload_all(src.data(), src.size()));
  KESTREL_RETURN_IF_ERROR(st->dst.allocate(size_t(scale_bytes(s, to)), slots));

  out->shape = shape_label(s) + " " + scale_layout_name(from) + "->" + scale_layout_name(to);
  out->launch.slots = slots;
  out->launch.fn = [st, s, from, to](cudaStream_t stream, int slot) {
    return convert_scale_layout(scales_view(st->src.at(slot), s, from), from,
                                scales_view(st->dst.at(slot), s, to), to, s.rows, s.k, s.l, stream);
  };
  PeerLaunch copy;
  KESTREL_RETURN_IF_ERROR(make_copy_peer(int64_t(out->work.bytes), slots, &copy));
  out->peers.push_back(std::move(copy));
  return Status::Ok();
}

}  // namespace

void register_nvfp4_codec_ops(OpRegistry& reg) {
  auto with = [](std::vector<ParamSpec> v, std::initializer_list<ParamSpec> more) {
    v.insert(v.end(), more);
    return v;
  };
  reg.add({"quantize", kFamily,
           "x (bf16/fp16/fp32, [L][m][k]) -> NVFP4 values + e4m3 block scales; checked byte "
           "for byte against the float64 reference quantizer",
           with(shape_params(),
                {dtype_param("dtype of x"),
                 layout_param("layout", "scale layout written"),
                 {"global_scale", ParamKind::kFloat, "1", "fp32 global scale of the output", {}},
                 seed_param()}),
           check_quantize, bench_quantize});
  reg.add(
      {"dequantize", kFamily,
       "NVFP4 ([L][m][k]) -> bf16/fp16/fp32; checked against the float64 reference with "
       "the output dtype's pass rule",
       with(shape_params(), {dtype_param("dtype of the output"),
                             layout_param("layout", "scale layout read"),
                             {"data",
                              ParamKind::kChoice,
                              "realistic",
                              "check input: quantized normal data, or the GPU MODE GEMM generator",
                              {"realistic", "gpumode"}},
                             seed_param()}),
       check_dequantize, bench_dequantize});
  reg.add(
      {"convert_scales", kFamily,
       "e4m3 block scales linear <-> blocked (128x4); checked byte for byte",
       with(shape_params(),
            {layout_param("from", "source layout (the target is the other one)"), seed_param()}),
       check_convert, bench_convert});
}

}  // namespace kestrel::bench
