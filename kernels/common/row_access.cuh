// How a row-wise kernel moves its rows (its ACCESS template argument; the
// host picks one per call from the tensors' alignment). See row_io.cuh.
#pragma once

namespace kestrel {

enum RowAccess : int {
  kRowElementwise = 0,  // element by element: rows misaligned unequally across tensors
  kRowVector = 1,       // 16-byte accesses: every row starts 16-byte aligned
  kRowShifted = 2,      // 16-byte accesses from the boundary before each misaligned row
  // Chosen by a kernel, never by the host: a kRowVector CTA whose every vector
  // lies inside its rows runs a copy of its body with no per-vector checks.
  kRowWhole = 3,
};

}  // namespace kestrel
