#include "bench/nvfp4_operands.h"

#include "runtime/cuda_check.h"

namespace kestrel::bench {

ScaleLayout layout_named(const std::string& name) {
  return name == "blocked" ? ScaleLayout::kBlocked : ScaleLayout::kLinear;
}

int64_t nvfp4_scale_bytes(int64_t rows, int64_t k, int64_t l, ScaleLayout layout) {
  return layout == ScaleLayout::kLinear ? l * rows * (k / 16) : blocked_scale_bytes(rows, k, l);
}

Nvfp4View nvfp4_view(void* values, void* scales, int64_t rows, int64_t k, int64_t l,
                     ScaleLayout layout, float global_scale) {
  Nvfp4View v;
  v.values = TensorView::dense(values, DType::kE2M1x2, {l, rows, k / 2});
  v.scales = layout == ScaleLayout::kLinear
                 ? TensorView::dense(scales, DType::kE4M3, {l, rows, k / 16})
                 : TensorView::dense(scales, DType::kE4M3, {blocked_scale_bytes(rows, k, l)});
  v.layout = layout;
  v.global_scale = global_scale;
  return v;
}

ref::HostNvfp4 check_operand(const std::string& data, testing::GpuModeData kind, int64_t l,
                             int64_t rows, int64_t k, uint64_t seed, ScaleLayout layout) {
  ref::HostNvfp4 h = data == "gpumode" ? testing::gpumode_nvfp4(kind, l, rows, k, seed)
                                       : testing::realistic_nvfp4(l, rows, k, seed);
  h.scales = ref::convert_scales(h.scales, h.layout, layout, rows, k, l);
  h.layout = layout;
  return h;
}

Status DeviceOperand::upload(const ref::HostNvfp4& h) {
  KESTREL_RETURN_IF_ERROR(values.allocate(h.values.size()));
  KESTREL_RETURN_IF_ERROR(values.upload(h.values.data(), h.values.size()));
  KESTREL_RETURN_IF_ERROR(scales.allocate(h.scales.size()));
  return scales.upload(h.scales.data(), h.scales.size());
}

Nvfp4View DeviceOperand::view(const ref::HostNvfp4& h) const {
  return nvfp4_view(values.get(), scales.get(), h.rows, h.k, h.batches, h.layout, h.global_scale);
}

Status SlottedOperand::fill(int64_t l_, int64_t rows_, int64_t k_, ScaleLayout layout_, int slots,
                            uint64_t seed) {
  l = l_;
  rows = rows_;
  k = k_;
  layout = layout_;
  const auto h = testing::gpumode_nvfp4(testing::GpuModeData::kGemm, l, rows, k, seed);
  const auto sc = ref::convert_scales(h.scales, ScaleLayout::kLinear, layout, rows, k, l);
  KESTREL_RETURN_IF_ERROR(values.allocate(h.values.size(), slots));
  KESTREL_RETURN_IF_ERROR(values.upload_all(h.values.data(), h.values.size()));
  KESTREL_RETURN_IF_ERROR(scales.allocate(sc.size(), slots));
  return scales.upload_all(sc.data(), sc.size());
}

Nvfp4View SlottedOperand::view(int slot) const {
  return nvfp4_view(values.at(slot), scales.at(slot), rows, k, l, layout, 1.0f);
}

int64_t SlottedOperand::essential_bytes() const { return l * rows * (k / 2 + k / 16); }

Status dequantized_bf16(const SlottedOperand& op, int slots, cudaStream_t stream,
                        SlottedBuffer* out) {
  KESTREL_RETURN_IF_ERROR(out->allocate(size_t(op.l * op.rows * op.k * 2), slots));
  for (int slot = 0; slot < slots; ++slot)
    KESTREL_RETURN_IF_ERROR(dequantize_nvfp4(
        op.view(0), TensorView::dense(out->at(slot), DType::kBF16, {op.l, op.rows, op.k}), stream));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream));
  return Status::Ok();
}

std::vector<ParamSpec> nvfp4_product_params(const std::string& generator) {
  const auto layout = [](const char* name, const char* help) {
    return ParamSpec{name, ParamKind::kChoice, "linear", help, {"linear", "blocked"}};
  };
  return {layout("a_layout", "scale layout of A"),
          layout("b_layout", "scale layout of B"),
          {"out", ParamKind::kChoice, "fp16", "output dtype", {"fp16", "bf16"}},
          {"data",
           ParamKind::kChoice,
           "realistic",
           "check input: quantized normal data, or the GPU MODE " + generator + " generator",
           {"realistic", "gpumode"}},
          {"seed", ParamKind::kInt, "1", "random data seed", {}}};
}

ParamSpec config_param(const char* name, const char* help) {
  return ParamSpec{name, ParamKind::kInt, "0", help, {}};
}

}  // namespace kestrel::bench
