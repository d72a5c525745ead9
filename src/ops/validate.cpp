#include "ops/validate.h"

#include <sstream>

namespace kestrel::ops {

Status check_not_null(const TensorView& t, const char* name) {
  if (t.data == nullptr && t.numel() > 0) return Status::InvalidArgument(arg(name, "data is null"));
  return Status::Ok();
}

Status check_dtype(const TensorView& t, std::initializer_list<DType> allowed, const char* name) {
  std::ostringstream os;
  for (DType d : allowed) {
    if (t.dtype == d) return Status::Ok();
    os << (os.tellp() > 0 ? "|" : "") << dtype_name(d);
  }
  return Status::InvalidArgument(
      arg(name, "dtype must be " + os.str() + ", got " + dtype_name(t.dtype)));
}

Status check_rank(const TensorView& t, int min_rank, int max_rank, const char* name) {
  if (t.rank < min_rank || t.rank > max_rank) {
    return Status::InvalidArgument(arg(name, "rank must be in [" + std::to_string(min_rank) + ", " +
                                                 std::to_string(max_rank) + "], got " +
                                                 std::to_string(t.rank)));
  }
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] < 0)
      return Status::InvalidArgument(arg(name, "negative extent in " + t.describe()));
  return Status::Ok();
}

Status check_row_major(const TensorView& t, const char* name) {
  if (t.rank == 0) return Status::Ok();
  if (t.stride[t.rank - 1] != 1 && t.shape[t.rank - 1] > 1)
    return Status::InvalidArgument(arg(name, "innermost stride must be 1, got " + t.describe()));
  int64_t span = t.shape[t.rank - 1];
  for (int d = t.rank - 2; d >= 0; --d) {
    if (t.shape[d] > 1 && t.stride[d] < span)
      return Status::InvalidArgument(
          arg(name, "stride of dim " + std::to_string(d) + " overlaps the inner dims: " +
                        t.describe()));
    span = t.stride[d] * t.shape[d];
  }
  return Status::Ok();
}

Status check_aligned(const TensorView& t, int bytes, const char* name) {
  const int es = dtype_size(t.dtype);
  if (reinterpret_cast<uintptr_t>(t.data) % bytes != 0)
    return Status::InvalidArgument(arg(name, "data must be " + std::to_string(bytes) +
                                                 "-byte aligned"));
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.shape[d] > 1 && (t.stride[d] * es) % bytes != 0)
      return Status::InvalidArgument(arg(name, "stride of dim " + std::to_string(d) +
                                                   " must be a multiple of " +
                                                   std::to_string(bytes) + " bytes: " +
                                                   t.describe()));
  return Status::Ok();
}

Status check_positive(int64_t value, const char* name) {
  if (value <= 0)
    return Status::InvalidArgument(arg(name, "must be positive, got " + std::to_string(value)));
  return Status::Ok();
}

Status check_multiple(int64_t value, int64_t of, const char* name) {
  if (value % of != 0)
    return Status::InvalidArgument(arg(name, "must be a multiple of " + std::to_string(of) +
                                                 ", got " + std::to_string(value)));
  return Status::Ok();
}

Status check_at_most(int64_t value, int64_t limit, const char* name, const char* why) {
  if (value > limit)
    return Status::InvalidArgument(arg(name, "must be at most " + std::to_string(limit) + " (" +
                                                 why + "), got " + std::to_string(value)));
  return Status::Ok();
}

Status check_same_shape(const TensorView& a, const char* a_name, const TensorView& b,
                        const char* b_name) {
  bool same = a.rank == b.rank;
  for (int d = 0; same && d < a.rank; ++d) same = a.shape[d] == b.shape[d];
  if (!same)
    return Status::InvalidArgument(std::string(b_name) + ": shape must equal " + a_name +
                                   "'s, got " + b.describe() + " vs " + a.describe());
  return Status::Ok();
}

Shape3 shape3(const TensorView& t) {
  Shape3 s{};
  const bool r3 = t.rank == 3;
  s.batches = r3 ? t.shape[0] : 1;
  s.rows = t.shape[t.rank - 2];
  s.cols = t.shape[t.rank - 1];
  s.row_stride = t.stride[t.rank - 2];
  s.batch_stride = r3 ? t.stride[0] : s.rows * s.row_stride;
  return s;
}

}  // namespace kestrel::ops
