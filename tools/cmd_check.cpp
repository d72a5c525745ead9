// `kestrel check OP --param value ...`: the op on fresh random data, outputs
// poisoned, compared with the float64 reference by the op's pass rule.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "bench/runner.h"
#include "cli.h"
#include "op_commands.h"
#include "runtime/device.h"

namespace kestrel::cli {
namespace {

int check_op(const std::string& name, const std::map<std::string, std::string>& values) {
  const bench::OpInfo* op = nullptr;
  Status s = bench::lookup_op(bench::builtin_registry(), name, &op);
  if (!s.ok())
    return fail(s.code() == StatusCode::kUnsupported ? kExitFailure : kExitUsage, s.message());
  bench::Params params;
  s = bench::resolve_params(*op, values, &params);
  if (!s.ok()) return fail(kExitUsage, s.message());
  if (!require_gpu()) return kExitFailure;

  bench::OpEnv env;
  s = rt::current_device(&env.device);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  if (cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking) != cudaSuccess)
    return fail(kExitFailure, "cannot create a CUDA stream");
  bench::CheckReport report;
  s = bench::run_check(*op, params, env, &report);
  cudaStreamDestroy(env.stream);
  if (!s.ok()) return fail(exit_code_of(s), s.to_string());
  std::printf("check %s %s: %s\n", name.c_str(),
              bench::describe_params(params.values(), op).c_str(), report.pass ? "PASS" : "FAIL");
  std::string detail = report.detail;  // indent every line under the verdict
  for (size_t pos = detail.find('\n'); pos != std::string::npos; pos = detail.find('\n', pos + 3))
    detail.replace(pos, 1, "\n  ");
  std::printf("  %s\n", detail.c_str());
  return report.pass ? kExitOk : kExitFailure;
}

}  // namespace

Command check_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "check",
      "Check OP on fresh random data against the float64 reference (kestrel check OP "
      "--help lists its parameters)");
  auto ops = add_op_commands(sub, false);
  return {sub, [sub, ops] {
            if (const auto* e = ops->parsed()) return check_op(e->op, e->values);
            const auto extras = sub->remaining();
            if (!extras.empty())
              return fail(kExitUsage,
                          "unknown op '" + extras.front() + "' (kestrel list shows the ops)");
            return fail(kExitUsage, "check: name an op (kestrel list shows the ops)");
          }};
}

}  // namespace kestrel::cli
