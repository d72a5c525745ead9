// `kestrel tune OP --param value ...`: grid search over the op's kernel
// configuration space (DESIGN.md §7). Every configuration is checked against
// the float64 reference on fresh data before it is timed (unless --no-check);
// a configuration that fails the check or cannot launch is never ranked.
// Configuration parameters given on the command line narrow the search.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench/precompile.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/search_space.h"
#include "cli.h"
#include "op_commands.h"
#include "ops/tuning_table.h"

namespace kestrel::cli {
namespace {

struct TuneOptions {
  int runs = 20, warmup = 3, top = 10;
  bool no_check = false;
  std::string save;     // tuning table file to put the fastest configuration in
  int64_t check_m = 0;  // > 0: check each configuration at this many rows, not --m's
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
  std::printf("compiled %d kernels ahead on %d workers in %.1f s (%d cached, %d failed)\n",
              r.compiled, r.workers, r.seconds, r.cached, r.failed);
  std::fflush(stdout);
}

// Puts the fastest configuration into the tuning table at `path` (created
// when missing; an entry of the same GPU, op and shape replaced).
Status save_fastest(const bench::OpInfo& op, const bench::Params& best, double us,
                    double heuristic_us, const std::string& path) {
  ops::TuningTable table;
  const Status read = ops::load_tuning_table(path, "--save", &table);
  if (!read.ok() && read.code() != StatusCode::kNotFound) return read;
  std::string saved;
  KESTREL_RETURN_IF_ERROR(op.tuned_entry(best, us, heuristic_us, &table, &saved));
  std::ofstream out{path};
  out << table.to_json();
  out.close();
  if (!out) return Status::Internal("--save: cannot write '" + path + "'");
  std::printf("saved: %s in %s\n", saved.c_str(), path.c_str());
  return Status::Ok();
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
  if (!o.save.empty() && !op->tuned_entry)
    return fail(kExitUsage, "--save: op '" + e->op + "' has no tuning table entries yet");
  // Only checked configurations go into a table.
  if (!o.save.empty() && o.no_check)
    return fail(kExitUsage, "--save: needs every configuration checked (drop --no-check)");
  bench::SearchSpace space;
  s = bench::search_space(*op, e->values, &space);
  if (!s.ok()) return fail(kExitUsage, s.message());
  const auto& configs = space.configs;

  // First the heuristic's own choice (no configuration pinned), then every configuration.
  bench::Suite suite;
  suite.name = "tune " + e->op;
  // The first row is the heuristic's with every tuning table off: the
  // baseline a saved entry records (a table's pick is in the grid anyway).
  setenv("KESTREL_TUNING_TABLE", ops::kNoTuningTables, 1);
  suite.cases.push_back({e->op, space.heuristic, "heuristic"});
  for (const auto& cfg : configs) {
    auto values = space.heuristic;
    for (const auto& [k, v] : cfg) values[k] = v;
    bench::Params p;
    if (!bench::resolve_params(*op, values, &p).ok())
      return fail(kExitUsage,
                  "tune: configuration " + as_options(cfg) + " is not a valid parameter set");
    suite.cases.push_back({e->op, values, as_options(cfg)});
  }
  if (o.check_m > 0 && std::none_of(op->params.begin(), op->params.end(),
                                    [](const bench::ParamSpec& p) { return p.name == "m"; }))
    return fail(kExitUsage, "--check-m: op '" + e->op + "' has no m parameter");
  if (!require_gpu()) return kExitFailure;
  precompile_cases(*op, suite);

  bench::RunOptions ro;
  ro.timer.runs = o.runs;
  ro.timer.warmup = o.warmup;
  ro.check = !o.no_check && o.check_m == 0;
  ro.peers = false;
  std::unique_ptr<bench::Runner> runner;
  s = bench::Runner::create(ro, &runner);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  std::vector<bench::ResultRow> rows = runner->run_suite(suite);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].shape = suite.cases[i].label;
  if (!o.no_check && o.check_m > 0) {
    // The same kernels on fewer rows: the float64 reference of the timed
    // shape can take seconds per configuration.
    for (size_t i = 0; i < rows.size(); ++i) {
      auto values = suite.cases[i].params;
      values["m"] = std::to_string(o.check_m);
      bench::Params p;
      bench::CheckReport report;
      Status cs = bench::resolve_params(*op, values, &p);
      if (cs.ok()) cs = bench::run_check(*op, p, runner->env(), &report);
      rows[i].check = cs.ok() && report.pass ? "pass" : "FAIL";
      if (rows[i].check == "FAIL")
        std::printf("%s at m=%lld: %s\n", suite.cases[i].label.c_str(),
                    static_cast<long long>(o.check_m),
                    cs.ok() ? report.detail.c_str() : cs.to_string().c_str());
    }
  }

  std::vector<size_t> order;  // the ranked cases' indices, fastest first
  int failed = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].state == bench::RowState::kOk && rows[i].check != "FAIL") {
      order.push_back(i);
    } else {
      ++failed;
    }
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return rows[a].time_us < rows[b].time_us; });
  std::vector<bench::ResultRow> ranked;
  for (size_t i : order) ranked.push_back(rows[i]);
  if (int(ranked.size()) > o.top) ranked.resize(size_t(o.top));
  std::printf("# kestrel tune %s (%zu configurations, %d not ranked: failed check or launch)\n\n",
              e->op.c_str(), configs.size(), failed);
  std::fputs(bench::markdown_table(ranked).c_str(), stdout);
  if (!ranked.empty()) std::printf("\nbest: %s\n", ranked.front().shape.c_str());
  for (const auto& r : rows)
    if (r.check == "FAIL") std::printf("check FAILED: %s\n", r.shape.c_str());
  if (rows.front().check == "FAIL") return kExitFailure;
  if (!o.save.empty()) {
    if (order.empty() || rows.front().state != bench::RowState::kOk)
      return fail(kExitFailure, "--save: the heuristic's call or every configuration failed");
    bench::Params best;
    s = bench::resolve_params(*op, suite.cases[order.front()].params, &best);
    if (s.ok())
      s = save_fastest(*op, best, rows[order.front()].time_us, rows.front().time_us, o.save);
    if (!s.ok()) return fail(exit_code_of(s), s.to_string());
  }
  return kExitOk;
}

}  // namespace

Command tune_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "tune",
      "Grid-search OP's kernel configurations at the given shape: check each against the "
      "reference, time it, print the fastest (kestrel tune OP --help lists its parameters; "
      "a configuration parameter given, e.g. --bn 128, searches only the configurations "
      "with that value)");
  auto o = std::make_shared<TuneOptions>();
  sub->add_option("--runs", o->runs, "timed runs per configuration")->capture_default_str();
  sub->add_option("--warmup", o->warmup, "untimed calls first")->capture_default_str();
  sub->add_option("--top", o->top, "configurations listed")->capture_default_str();
  sub->add_flag("--no-check", o->no_check,
                "time without checking each configuration first (the float64 reference of a "
                "large GEMM takes seconds per configuration; the GPU tests cover every "
                "configuration family on small shapes)");
  sub->add_option("--check-m", o->check_m,
                  "check each configuration at this many rows instead of --m's (the same "
                  "kernels; the float64 reference of a large shape takes seconds per "
                  "configuration); 0: at --m")
      ->capture_default_str();
  sub->add_option("--save", o->save,
                  "put the fastest configuration into this tuning table file (created when "
                  "missing); the ops read the table KESTREL_TUNING_TABLE names");
  auto ops = add_op_commands(sub, true);
  return {sub, [o, sub, ops] { return run_tune(*o, sub, *ops); }};
}

}  // namespace kestrel::cli
