// The ops that `kestrel check` and `kestrel bench` know. Each op declares its
// parameters (so the CLI can offer them as options and suites can be
// validated), a check against the float64 reference, and a bench set-up that
// hands the harness a launch callable, its work (bytes, flops) and its peers.
//
// Adding an op family: write src/bench/ops_<family>.cpp with one
// register_<family>_ops(OpRegistry&) function and add one line to
// builtin_registry() in op_registry.cpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/peers.h"
#include "bench/sol.h"
#include "bench/timer.h"
#include "kestrel/status.h"
#include "ops/tuning_table.h"
#include "runtime/device.h"
#include "runtime/kernel_spec.h"

namespace kestrel::bench {

enum class ParamKind {
  kInt,      // decimal integer
  kFloat,    // decimal or scientific real
  kChoice,   // one of ParamSpec::choices
  kIntList,  // comma-separated integers ("80,176,128")
};

struct ParamSpec {
  std::string name;  // CLI option --name and suite key
  ParamKind kind = ParamKind::kInt;
  std::string default_value;
  std::string help;
  std::vector<std::string> choices;  // kChoice only
};

// Validated values of all of an op's parameters (defaults filled in).
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  std::vector<int64_t> int_list(const std::string& name) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Where an op's check or bench runs.
struct OpEnv {
  const rt::DeviceInfo* device = nullptr;
  cudaStream_t stream = nullptr;
};

struct CheckReport {
  bool pass = false;
  std::string detail;  // the rule, mismatches and the worst element
};

struct BenchCase {
  std::string shape;  // row label, e.g. "8192x8192 bf16 linear"
  Work work;
  Launchable launch;
  std::vector<PeerLaunch> peers;
};

struct OpInfo {
  std::string name;
  std::string family;  // geometric means in reports are taken per family
  std::string description;
  std::vector<ParamSpec> params;
  // Fresh random data, GPU op on poisoned outputs, comparison with the reference.
  std::function<Status(const Params&, const OpEnv&, CheckReport*)> check;
  // Allocates and fills inputs, returns what to time. Kept alive by the closures.
  std::function<Status(const Params&, const OpEnv&, BenchCase*)> bench;
  // The kernel's configuration space at the given parameters (a shape may
  // limit it) as parameter overrides, one map per configuration, for
  // `kestrel tune`; empty when the op has no knobs.
  std::function<std::vector<std::map<std::string, std::string>>(const Params&)> configs = nullptr;
  // The kernels a call with these parameters (a configuration of `configs`
  // included) launches, so that `kestrel tune` can compile them all ahead in
  // parallel. Best effort: a kernel left out compiles at its first launch.
  std::function<std::vector<rt::KernelSpec>(const Params&)> kernels = nullptr;
  // Puts the tuning table's entry for a call with these parameters (a
  // configuration of `configs`, or none: the op's own pick) that took `us`
  // against the heuristic's `heuristic_us` into the table, and describes it
  // in `saved`; for `kestrel tune --save`. Null where the op has no entries.
  std::function<Status(const Params&, double us, double heuristic_us, ops::TuningTable*,
                       std::string* saved)>
      tuned_entry = nullptr;
};

class OpRegistry {
 public:
  void add(OpInfo op);
  const OpInfo* find(const std::string& name) const;
  const std::vector<OpInfo>& ops() const { return ops_; }
  // Names of DESIGN.md's ops that have no registered implementation yet.
  std::vector<std::string> planned() const;

 private:
  std::vector<OpInfo> ops_;
};

// Every op of DESIGN.md §1, implemented or not, by its CLI name.
const std::vector<std::string>& all_op_names();

// The built-in ops, registered on first use.
const OpRegistry& builtin_registry();

// The op called `name`: NotFound for a name Kestrel does not know,
// Unsupported ("op 'gemv' is not implemented yet") for a planned one.
Status lookup_op(const OpRegistry& reg, const std::string& name, const OpInfo** out);

// Checks `given` against the op's parameters (unknown names, kinds, choices)
// and fills in defaults. Errors name the parameter and the rule.
Status resolve_params(const OpInfo& op, const std::map<std::string, std::string>& given,
                      Params* out);

// "m=8192 k=8192 dtype=bf16", in the op's parameter order (or map order).
std::string describe_params(const std::map<std::string, std::string>& values,
                            const OpInfo* op = nullptr);

// Registration functions, one per op family file.
void register_nvfp4_codec_ops(OpRegistry& reg);
void register_rowwise_ops(OpRegistry& reg);
void register_nvfp4_gemv_ops(OpRegistry& reg);
void register_nvfp4_gemm_ops(OpRegistry& reg);
void register_fp8_gemm_ops(OpRegistry& reg);

}  // namespace kestrel::bench
