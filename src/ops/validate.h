// Argument checks shared by every op. Each returns a Status whose message
// names the argument and the rule, so callers can just propagate it.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kestrel/status.h"
#include "kestrel/tensor.h"

namespace kestrel::ops {

inline std::string arg(const char* name, const std::string& rule) {
  return std::string(name) + ": " + rule;
}

Status check_not_null(const TensorView& t, const char* name);
Status check_dtype(const TensorView& t, std::initializer_list<DType> allowed, const char* name);
Status check_rank(const TensorView& t, int min_rank, int max_rank, const char* name);
// Innermost stride 1, others >= the extent they step over (no overlap).
Status check_row_major(const TensorView& t, const char* name);
// data pointer and every outer stride (in bytes) multiples of `bytes`.
Status check_aligned(const TensorView& t, int bytes, const char* name);
Status check_positive(int64_t value, const char* name);
Status check_multiple(int64_t value, int64_t of, const char* name);
Status check_at_most(int64_t value, int64_t limit, const char* name, const char* why);
// Two views with identical logical shapes.
Status check_same_shape(const TensorView& a, const char* a_name, const TensorView& b,
                        const char* b_name);

// Shape of a [L][rows][cols] view given as rank 2 (L = 1) or rank 3.
struct Shape3 {
  int64_t batches, rows, cols;
  int64_t batch_stride, row_stride;
};
Shape3 shape3(const TensorView& t);

}  // namespace kestrel::ops
