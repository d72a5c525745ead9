// Validation of NVFP4 tensor views, shared by every NVFP4 op.
#include <string>

#include "kestrel/nvfp4.h"
#include "ops/validate.h"

namespace kestrel {

const char* scale_layout_name(ScaleLayout layout) {
  return layout == ScaleLayout::kLinear ? "linear" : "blocked";
}

Status validate_nvfp4(const Nvfp4View& t, const char* name) {
  using namespace ops;
  const std::string v = std::string(name) + ".values", s = std::string(name) + ".scales";
  KESTREL_RETURN_IF_ERROR(check_dtype(t.values, {DType::kE2M1x2}, v.c_str()));
  KESTREL_RETURN_IF_ERROR(check_rank(t.values, 2, 3, v.c_str()));
  KESTREL_RETURN_IF_ERROR(check_row_major(t.values, v.c_str()));
  KESTREL_RETURN_IF_ERROR(check_not_null(t.values, v.c_str()));
  KESTREL_RETURN_IF_ERROR(check_dtype(t.scales, {DType::kE4M3}, s.c_str()));
  KESTREL_RETURN_IF_ERROR(check_not_null(t.scales, s.c_str()));
  const int64_t batches = t.batches(), rows = t.rows(), k = t.k();
  KESTREL_RETURN_IF_ERROR(check_multiple(k, 16, (std::string(name) + " K").c_str()));
  if (t.layout == ScaleLayout::kLinear) {
    KESTREL_RETURN_IF_ERROR(check_rank(t.scales, t.values.rank, t.values.rank, s.c_str()));
    KESTREL_RETURN_IF_ERROR(check_row_major(t.scales, s.c_str()));
    const Shape3 ss = shape3(t.scales);
    if (ss.batches != batches || ss.rows != rows || ss.cols != k / 16)
      return Status::InvalidArgument(
          s + ": linear scales must be [L][rows][K/16] = [" + std::to_string(batches) + "][" +
          std::to_string(rows) + "][" + std::to_string(k / 16) + "], got " + t.scales.describe());
  } else {
    const int64_t need = blocked_scale_bytes(rows, k, batches);
    if (t.scales.rank != 1 || t.scales.shape[0] != need)
      return Status::InvalidArgument(s + ": blocked scales must be rank 1 with " +
                                     std::to_string(need) +
                                     " bytes (rows padded to 128, K/16 to 4), got " +
                                     t.scales.describe());
    if (t.scales.stride[0] != 1)
      return Status::InvalidArgument(s + ": blocked scales must be contiguous");
  }
  return Status::Ok();
}

}  // namespace kestrel
