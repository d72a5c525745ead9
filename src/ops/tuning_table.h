// Tuned kernel configurations (DESIGN.md §7): what `kestrel tune --save`
// found fastest for one GPU, op and shape, consulted before the heuristic.
// The row-wise ops and the NVFP4 GEMM and dual GEMM so far.
//
// A table is a JSON file:
//   {"format": "kestrel-tuning-1",
//    "rowwise": [{"gpu": "NVIDIA H100 80GB HBM3", "op": "cross_entropy_fwd",
//                 "dtype": "bf16", "n": 50257, "access": "shifted",
//                 "variant": "", "config": {"threads": 512, "tpr": 512,
//                 "cluster": 1, "l2_group": false, "rpt": 1},
//                 "us": 574.8, "heuristic_us": 658.9, "tuned_m": 16384}],
//    "gemm": [{"gpu": "NVIDIA H100 80GB HBM3", "op": "dual_gemm", "m": 512,
//              "n": 3072, "k": 7168, "l": 1, "packed": true,
//              "w_layout": "linear", "config": {"bn": 256, "stages": 3,
//              "split": 1, "split_l2": false, "tail": true},
//              "us": 66.9, "heuristic_us": 66.9}]}
// "us", "heuristic_us" and "tuned_m" record the search; the rest is the key
// and the pick. The library ships the tables under tuning/ (one per GPU). A row-wise entry serves
// any number of rows that fills the GPU with it; a GEMM entry serves its exact shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/row_access.cuh"
#include "kestrel/gemm.h"
#include "kestrel/rowwise.h"

namespace kestrel::ops {

struct RowwiseTuningKey {
  std::string gpu;  // the device's name, as the driver reports it
  RowwiseOp op = RowwiseOp::kRmsNormFwd;
  DType dtype = DType::kBF16;
  int64_t n = 0;
  RowAccess access = kRowVector;  // how the rows move (vector, shifted, elementwise)
  // The call's options that change the kernel's work per byte: "residual",
  // "weight", "smoothing", joined by '+' in that order; "" for none.
  std::string variant;

  bool operator==(const RowwiseTuningKey& o) const {
    return gpu == o.gpu && op == o.op && dtype == o.dtype && n == o.n && access == o.access &&
           variant == o.variant;
  }
};

struct RowwiseTuned {
  RowwiseTuningKey key;
  RowwiseConfig config;
  double us = 0, heuristic_us = 0;  // the search's times, for the record
  int64_t tuned_m = 0;              // the rows it was timed on
};

struct GemmTuningKey {
  std::string gpu;
  bool dual = false;  // dual_gemm_nvfp4, else gemm_nvfp4
  int64_t m = 0, n = 0, k = 0, batches = 1;
  bool w_packed = false;   // weights from pack_gemm_weights
  bool w_blocked = false;  // row-major weights with blocked scales

  bool operator==(const GemmTuningKey& o) const {
    return gpu == o.gpu && dual == o.dual && m == o.m && n == o.n && k == o.k &&
           batches == o.batches && w_packed == o.w_packed && w_blocked == o.w_blocked;
  }
};

struct GemmTuned {
  GemmTuningKey key;
  GemmConfig config;
  double us = 0, heuristic_us = 0;
};

class TuningTable {
 public:
  // A table from a file's text; `source` names the file in errors. Every
  // entry's configuration must be legal for its op, row length and dtype.
  static Status parse(const std::string& text, const std::string& source, TuningTable* out);
  std::string to_json() const;

  // Adds `e`, replacing an entry of the same key.
  void put(const RowwiseTuned& e);
  void put(const GemmTuned& e);
  void put_all(const TuningTable& t);  // every entry of `t`, over ours of the same key
  const RowwiseTuned* find(const RowwiseTuningKey& k) const;
  const GemmTuned* find(const GemmTuningKey& k) const;
  const std::vector<RowwiseTuned>& rowwise() const { return rowwise_; }
  const std::vector<GemmTuned>& gemm() const { return gemm_; }

 private:
  std::vector<RowwiseTuned> rowwise_;
  std::vector<GemmTuned> gemm_;
};

// The configuration a call of m rows takes from `t`: its entry's, where the
// table has one for the key and its grid covers the GPU's SMs (fewer rows
// are the heuristic's: it spreads them over more CTAs); else null.
const RowwiseConfig* tuned_rowwise_config(const TuningTable& t, const RowwiseTuningKey& k,
                                          int64_t m, int sm_count);

// The table in the file at `path`; `source` names it in errors (NotFound
// where the file cannot be read).
Status load_tuning_table(const std::string& path, const std::string& source, TuningTable* out);

// KESTREL_TUNING_TABLE's value that turns every table off: the heuristic's picks.
constexpr const char* kNoTuningTables = "none";

// The tables shipped in the library (tuning/*.json, embedded at build time),
// merged.
Status shipped_tuning_table(const TuningTable** out);

// The table in effect: the shipped tables, under the entries of the file
// $KESTREL_TUNING_TABLE names (each file read once per process); none at all
// where the variable is "none". A file that cannot be read or parsed fails
// every call that consults it, with the reason.
Status active_tuning_table(const TuningTable** out);
// Where the table in effect comes from, in words (for `kestrel info`).
std::string active_tuning_table_source();

const char* row_access_name(RowAccess a);  // "vector", "shifted", "elementwise"

}  // namespace kestrel::ops
