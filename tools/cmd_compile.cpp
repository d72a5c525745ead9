// `kestrel compile [--all]`: fills the disk kernel cache ahead of time, on all
// cores and without a GPU, so that a serving process (or a GPU session with
// little time) loads every kernel instead of compiling it at first launch.
#include <cstdio>

#include "bench/precompile.h"
#include "cli.h"
#include "ops/kernel_catalog.h"
#include "runtime/compiler.h"

namespace kestrel::cli {
namespace {

struct CompileOptions {
  bool all = false;
  std::string arch = "sm_90a";
  int threads = 0;  // 0: every core
};

int run_compile(const CompileOptions& o) {
  if (rt::kernel_cache_dir().empty())
    return fail(kExitUsage, "compile: the kernel cache is off (KESTREL_CACHE_DIR=off)");
  auto specs = ops::default_kernel_specs();
  if (o.all)
    for (auto& s : ops::configuration_space_specs()) specs.push_back(std::move(s));
  if (o.threads < 0) return fail(kExitUsage, "compile: --threads must be >= 0");
  const bench::PrecompileResult r = bench::precompile(specs, o.arch, o.threads);
  std::printf("%s kernels for %s into %s: %d compiled, %d cached, %d failed (%d workers, %.1f s)\n",
              o.all ? "the default and every tunable configuration's" : "the default",
              o.arch.c_str(), rt::kernel_cache_dir().c_str(), r.compiled, r.cached, r.failed,
              r.workers, r.seconds);
  return r.failed ? fail(kExitFailure, "compile: some kernels failed to compile") : kExitOk;
}

}  // namespace

Command compile_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "compile",
      "Compile the kernels into the disk cache ($KESTREL_CACHE_DIR) on all cores; needs no GPU");
  auto o = std::make_shared<CompileOptions>();
  sub->add_flag("--all", o->all,
                "every configuration kestrel tune may pick (GEMV, GEMM, dual GEMM), not only the "
                "defaults");
  sub->add_option("--arch", o->arch, "target architecture")->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "parallel compiles, each a worker process (0: every core, at most 32)")
      ->capture_default_str();
  return {sub, [o] { return run_compile(*o); }};
}

}  // namespace kestrel::cli
