// Runs bench cases: set-up, optional correctness check, timing of the op and
// its peers, SOL and rates. Every failure becomes a row, never an abort, so a
// suite always reports every case.
#pragma once
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/ceilings.h"
#include "bench/op_registry.h"
#include "bench/report.h"
#include "bench/suite.h"
#include "bench/timer.h"

namespace kestrel::bench {

struct RunOptions {
  TimerOptions timer;
  bool check = false;  // run the op's check on the same parameters before timing
  bool peers = true;
  bool progress = true;  // progress line on stderr for suites
};

// An op's check with exceptions (reference argument errors, allocation
// failures) turned into a failed Status.
Status run_check(const OpInfo& op, const Params& params, const OpEnv& env, CheckReport* out);

class Runner {
 public:
  // Needs a CUDA device: creates a stream and loads (or measures) the ceilings.
  static Status create(const RunOptions& opt, std::unique_ptr<Runner>* out);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const Ceilings& ceilings() const { return ceilings_; }
  const OpEnv& env() const { return env_; }

  // `label` names the case in the row when the op cannot describe it (an
  // unknown or planned op); empty: the params in map order.
  ResultRow run(const std::string& op, const std::map<std::string, std::string>& params,
                const std::string& label = "");
  std::vector<ResultRow> run_suite(const Suite& suite);

 private:
  Runner(const RunOptions& opt, cudaStream_t stream, const rt::DeviceInfo* dev, Ceilings c);
  Status time_case(const OpInfo& op, const Params& params, ResultRow* row);

  RunOptions opt_;
  OpEnv env_;
  Ceilings ceilings_;
  Timer timer_;
};

}  // namespace kestrel::bench
