// Host-side float tensors for op checks and bench inputs: the dtypes a user
// names (bf16, fp16, fp32), exact rounding of float64 data into them, decoding
// of kernel outputs, and the pass rule that belongs to each output dtype.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare.h"
#include "kestrel/tensor.h"

namespace kestrel::bench {

// "bf16", "fp16", "fp32": the choices of every float dtype parameter.
const std::vector<std::string>& float_dtype_names();
DType float_dtype(const std::string& name);  // name must be one of the above

// Rounds x to `t` (nearest even) and returns the stored bytes; `exact` (if
// not null) receives the rounded values, the input the reference must see.
std::vector<uint8_t> encode_floats(const std::vector<double>& x, DType t,
                                   std::vector<double>* exact);
std::vector<double> decode_floats(const std::vector<uint8_t>& bytes, DType t);

// The golden README's rule for an output of dtype `t`.
testing::CompareReport compare_floats(DType t, const std::vector<double>& out,
                                      const std::vector<double>& ref);

// n values of normal(0, 1) data for inputs that are only timed. Generates at
// most 4 Mi values and repeats them: the data only has to look like real
// activations, and generating 67 M normals on the host takes seconds.
std::vector<double> timing_data(int64_t n, uint64_t seed);
// The same for e4m3 codes (normal(0, 1) rounded to e4m3).
std::vector<uint8_t> timing_e4m3(int64_t n, uint64_t seed);

}  // namespace kestrel::bench
