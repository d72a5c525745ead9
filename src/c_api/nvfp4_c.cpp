// include/kestrel/c_api.h, NVFP4 quantization and the NVFP4 GEMMs: a
// kestrel_nvfp4 becomes an Nvfp4View of dense views, and each call forwards
// to the C++ API, whose validation names the rule.
#include <string>

#include "c_api/c_api_common.h"
#include "kestrel/c_api.h"
#include "kestrel/gemm.h"
#include "kestrel/nvfp4.h"

namespace kestrel {
namespace {

using namespace c_api;

static_assert(int(ScaleLayout::kLinear) == KESTREL_SCALES_LINEAR &&
              int(ScaleLayout::kBlocked) == KESTREL_SCALES_BLOCKED);

// The view of `t`; `name` ("a", "b1", ...) names its fields in errors.
Status nvfp4_of(const kestrel_nvfp4* t, const std::string& name, Nvfp4View* out) {
  if (!t) return Status::InvalidArgument(name + ": NULL");
  if (t->scale_layout != KESTREL_SCALES_LINEAR && t->scale_layout != KESTREL_SCALES_BLOCKED)
    return Status::InvalidArgument(name + ".scale_layout: must be KESTREL_SCALES_LINEAR or " +
                                   "KESTREL_SCALES_BLOCKED, got " +
                                   std::to_string(t->scale_layout));
  // Dense views hold k / 2 bytes and k / 16 scales a row: k must divide.
  if (t->k % 16 != 0)
    return Status::InvalidArgument(name + ".k: must be a multiple of 16, got " +
                                   std::to_string(t->k));
  out->layout = ScaleLayout(t->scale_layout);
  out->global_scale = t->global_scale;
  out->values = view(t->values, DType::kE2M1x2, {t->batches, t->rows, t->k / 2});
  out->scales =
      out->layout == ScaleLayout::kLinear
          ? view(t->scales, DType::kE4M3, {t->batches, t->rows, t->k / 16})
          : view(t->scales, DType::kE4M3, {blocked_scale_bytes(t->rows, t->k, t->batches)});
  return Status::Ok();
}

// batches: a's, or a grouped GEMM's groups.
GemmPackedWeights packed_of(const void* b, float global_scale, int64_t n, const Nvfp4View& a,
                            int64_t batches) {
  GemmPackedWeights w;
  w.values = b;
  w.batches = batches;
  w.n = n;
  w.k = a.k();
  w.global_scale = global_scale;
  return w;
}

TensorView c_view(void* c, DType t, const Nvfp4View& a, int64_t n) {
  return view(c, t, {a.batches(), a.rows(), n});
}

}  // namespace
}  // namespace kestrel

using namespace kestrel;

extern "C" {

int64_t kestrel_blocked_scale_bytes(int64_t rows, int64_t k, int64_t batches) {
  return blocked_scale_bytes(rows, k, batches);
}

int kestrel_quantize_nvfp4(const void* x, int dtype, const kestrel_nvfp4* t, void* stream) {
  DType xt;
  Nvfp4View v;
  Status s = dtype_of(dtype, "dtype", &xt);
  if (s.ok()) s = nvfp4_of(t, "t", &v);
  if (s.ok()) s = quantize_nvfp4(view(x, xt, {t->batches, t->rows, t->k}), v, stream_of(stream));
  return report(s);
}

int kestrel_dequantize_nvfp4(const kestrel_nvfp4* t, void* y, int dtype, void* stream) {
  DType yt;
  Nvfp4View v;
  Status s = dtype_of(dtype, "dtype", &yt);
  if (s.ok()) s = nvfp4_of(t, "t", &v);
  if (s.ok()) s = dequantize_nvfp4(v, view(y, yt, {t->batches, t->rows, t->k}), stream_of(stream));
  return report(s);
}

int kestrel_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b, void* c, int out_dtype,
                       void* stream) {
  DType ct;
  Nvfp4View av, bv;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok()) s = nvfp4_of(b, "b", &bv);
  if (s.ok()) s = gemm_nvfp4(av, bv, c_view(c, ct, av, bv.rows()), stream_of(stream));
  return report(s);
}

int kestrel_dual_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b1,
                            const kestrel_nvfp4* b2, void* c, int out_dtype, void* stream) {
  DType ct;
  Nvfp4View av, b1v, b2v;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok()) s = nvfp4_of(b1, "b1", &b1v);
  if (s.ok()) s = nvfp4_of(b2, "b2", &b2v);
  if (s.ok()) s = dual_gemm_nvfp4(av, b1v, b2v, c_view(c, ct, av, b1v.rows()), stream_of(stream));
  return report(s);
}

int64_t kestrel_gemm_packed_weight_bytes(int64_t n, int64_t k, int64_t batches) {
  return gemm_packed_weight_bytes(n, k, batches);
}

int kestrel_pack_gemm_weights(const kestrel_nvfp4* w, void* out, int64_t out_bytes, void* stream) {
  Nvfp4View wv;
  GemmPackedWeights packed;
  Status s = nvfp4_of(w, "w", &wv);
  if (s.ok()) s = pack_gemm_weights(wv, out, out_bytes, stream_of(stream), &packed);
  return report(s);
}

int kestrel_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b, float b_global_scale,
                              int64_t n, void* c, int out_dtype, void* stream) {
  DType ct;
  Nvfp4View av;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok())
    s = gemm_nvfp4(av, packed_of(b, b_global_scale, n, av, av.batches()), c_view(c, ct, av, n),
                   stream_of(stream));
  return report(s);
}

int kestrel_dual_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b1, float b1_global_scale,
                                   const void* b2, float b2_global_scale, int64_t n, void* c,
                                   int out_dtype, void* stream) {
  DType ct;
  Nvfp4View av;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok())
    s = dual_gemm_nvfp4(av, packed_of(b1, b1_global_scale, n, av, av.batches()),
                        packed_of(b2, b2_global_scale, n, av, av.batches()), c_view(c, ct, av, n),
                        stream_of(stream));
  return report(s);
}

int kestrel_grouped_gemm_nvfp4(const kestrel_nvfp4* a, const kestrel_nvfp4* b,
                               const kestrel_nvfp4* b2, const int32_t* ends, int64_t groups,
                               void* c, int out_dtype, void* stream) {
  DType ct;
  Nvfp4View av, bv, b2v;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok()) s = nvfp4_of(b, "b", &bv);
  if (s.ok() && b2) s = nvfp4_of(b2, "b2", &b2v);
  if (s.ok()) {
    const TensorView cv = view(c, ct, {av.rows(), bv.rows()});
    s = b2 ? grouped_dual_gemm_nvfp4(av, bv, b2v, {ends, groups}, cv, stream_of(stream))
           : grouped_gemm_nvfp4(av, bv, {ends, groups}, cv, stream_of(stream));
  }
  return report(s);
}

int kestrel_grouped_gemm_nvfp4_packed(const kestrel_nvfp4* a, const void* b, float b_global_scale,
                                      const void* b2, float b2_global_scale, int64_t n,
                                      const int32_t* ends, int64_t groups, void* c, int out_dtype,
                                      void* stream) {
  DType ct;
  Nvfp4View av;
  Status s = dtype_of(out_dtype, "out_dtype", &ct);
  if (s.ok()) s = nvfp4_of(a, "a", &av);
  if (s.ok()) {
    const TensorView cv = view(c, ct, {av.rows(), n});
    const GemmPackedWeights w = packed_of(b, b_global_scale, n, av, groups);
    s = b2 ? grouped_dual_gemm_nvfp4(av, w, packed_of(b2, b2_global_scale, n, av, groups),
                                     {ends, groups}, cv, stream_of(stream))
           : grouped_gemm_nvfp4(av, w, {ends, groups}, cv, stream_of(stream));
  }
  return report(s);
}

}  // extern "C"
