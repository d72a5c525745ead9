// `kestrel tune OP --param value ...`: grid search over the op's kernel
// configuration space (DESIGN.md §7). Every configuration is checked against
// the float64 reference on fresh data before it is timed (unless --no-check);
// a configuration that fails the check or cannot launch is never ranked.
#include <algorithm>
#include <cstdio>

#include "bench/precompile.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "cli.h"
#include "op_commands.h"

namespace kestrel::cli {
namespace {

struct TuneOptions {
  int runs = 20, warmup = 3, top = 10;
  bool no_check = false;
};

// The options that reproduce one configuration: "--rt 2 --warps 8".
std::string as_options(const std::map<std::string, std::string>& cfg) {
  std::string out;
  for (const auto& [k, v] : cfg) out += (out.empty() ? "--" : " --") + k + " " + v;
  return out;
}

// Every configuration's kernels compiled ahead on all cores (the runs would
// compile them one at a time), where the op can name them.
void precompile_cases(const bench::OpInfo& op, const bench::Suite& suite) {
  const rt::DeviceInfo* dev = nullptr;
  if (!op.kernels || !rt::current_device(&dev).ok()) return;
  std::vector<rt::KernelSpec> specs;
  for (const auto& c : suite.cases) {
    bench::Params p;
    if (!bench::resolve_params(op, c.params, &p).ok()) continue;
    for (auto& s : op.kernels(p)) specs.push_back(std::move(s));
  }
  const bench::PrecompileResult r = bench::precompile(specs, dev->arch(), 0);
  std::printf("compiled %d kernels ahead on %d threads in %.1f s (%d cached, %d failed)\n",
              r.compiled, r.threads, r.seconds, r.cached, r.failed);
  std::fflush(stdout);
}

int run_tune(const TuneOptions& o, CLI::App* sub, const OpCommands& ops) {
  const OpCommands::Entry* e = ops.parsed();
  if (!e) return fail(kExitUsage, "tune: name an op (kestrel list shows the ops)");
  if (!sub->remaining().empty())
    return fail(kExitUsage, "unknown argument '" + sub->remaining().front() + "'");
  if (o.runs < 1 || o.top < 1) return fail(kExitUsage, "tune: --runs and --top must be >= 1");
  const bench::OpInfo* op = nullptr;
  Status s = bench::lookup_op(bench::builtin_registry(), e->op, &op);
  if (!s.ok()) return fail(exit_code_of(s), s.message());
  if (!op->configs) return fail(kExitUsage, "tune: op '" + e->op + "' has no configuration space");
  bench::Params given;
  s = bench::resolve_params(*op, e->values, &given);
  if (!s.ok()) return fail(kExitUsage, s.message());
  const auto configs = op->configs(given);

  // First the heuristic's own choice (the values as given), then every configuration.
  bench::Suite suite;
  suite.name = "tune " + e->op;
  suite.cases.push_back({e->op, e->values, "heuristic"});
  for (const auto& cfg : configs) {
    auto values = e->values;
    for (const auto& [k, v] : cfg) values[k] = v;
    bench::Params p;
    if (!bench::resolve_params(*op, values, &p).ok())
      return fail(kExitUsage,
                  "tune: configuration " + as_options(cfg) + " is not a valid parameter set");
    suite.cases.push_back({e->op, values, as_options(cfg)});
  }
  if (!require_gpu()) return kExitFailure;
  precompile_cases(*op, suite);

  bench::RunOptions ro;
  ro.timer.runs = o.runs;
  ro.timer.warmup = o.warmup;
  ro.check = !o.no_check;
  ro.peers = false;
  std::unique_ptr<bench::Runner> runner;
  s = bench::Runner::create(ro, &runner);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  std::vector<bench::ResultRow> rows = runner->run_suite(suite);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].shape = suite.cases[i].label;

  std::vector<bench::ResultRow> ranked;
  int failed = 0;
  for (const auto& r : rows) {
    if (r.state == bench::RowState::kOk && r.check != "FAIL") {
      ranked.push_back(r);
    } else {
      ++failed;
    }
  }
  std::sort(ranked.begin(), ranked.end(), [](const bench::ResultRow& a, const bench::ResultRow& b) {
    return a.time_us < b.time_us;
  });
  if (int(ranked.size()) > o.top) ranked.resize(size_t(o.top));
  std::printf("# kestrel tune %s (%zu configurations, %d not ranked: failed check or launch)\n\n",
              e->op.c_str(), configs.size(), failed);
  std::fputs(bench::markdown_table(ranked).c_str(), stdout);
  if (!ranked.empty()) std::printf("\nbest: %s\n", ranked.front().shape.c_str());
  for (const auto& r : rows)
    if (r.check == "FAIL") std::printf("check FAILED: %s\n", r.shape.c_str());
  return rows.front().check == "FAIL" ? kExitFailure : kExitOk;
}

}  // namespace

Command tune_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "tune",
      "Grid-search OP's kernel configurations at the given shape: check each against the "
      "reference, time it, print the fastest (kestrel tune OP --help lists its parameters)");
  auto o = std::make_shared<TuneOptions>();
  sub->add_option("--runs", o->runs, "timed runs per configuration")->capture_default_str();
  sub->add_option("--warmup", o->warmup, "untimed calls first")->capture_default_str();
  sub->add_option("--top", o->top, "configurations listed")->capture_default_str();
  sub->add_flag("--no-check", o->no_check,
                "time without checking each configuration first (the float64 reference of a "
                "large GEMM takes seconds per configuration; the GPU tests cover every "
                "configuration family on small shapes)");
  auto ops = add_op_commands(sub, true);
  return {sub, [o, sub, ops] { return run_tune(*o, sub, *ops); }};
}

}  // namespace kestrel::cli
