// `kestrel bench OP --param value ...` and `kestrel bench --suite NAME`: times
// ops against their speed of light and their peers; prints a markdown table,
// optionally writes JSON and markdown files.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>

#include "bench/report.h"
#include "bench/runner.h"
#include "bench/suite.h"
#include "cli.h"
#include "op_commands.h"
#include "runtime/device.h"

namespace kestrel::cli {
namespace {

struct BenchOptions {
  std::string suite, json, markdown;
  int runs = 50, warmup = 5;
  double idle_us = 0;
  bool check = false, no_peers = false, no_graph = false, graph = false;
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string ceiling_text(const char* what, const bench::Ceiling& c, const char* unit) {
  return std::string(what) + " " + bench::format_fixed(c.value, c.value < 10 ? 2 : 0) + " " + unit +
         " (" + c.source + ")";
}

// The lines above the table: what ran where, against which ceilings.
std::string header(const bench::Suite& suite, const rt::DeviceInfo& dev, const bench::Ceilings& c,
                   const std::string& date) {
  return "# kestrel bench: " + suite.name + "\n\n" + "- GPU: " + dev.name + " (" +
         std::to_string(dev.sm_count) + " SMs, " + dev.arch() + ")\n- date: " + date +
         "\n- command: `" + command_line() +
         "`\n- ceilings: " + ceiling_text("copy", c.copy_tbps, "TB/s") + ", " +
         ceiling_text("bf16", c.bf16_tflops, "TFLOP/s") + ", " +
         ceiling_text("fp8", c.fp8_tflops, "TFLOP/s") + "\n";
}

std::string notes(const std::vector<bench::ResultRow>& rows) {
  std::string out;
  for (const auto& r : rows)
    if (!r.note.empty()) out += "- " + r.op + " " + r.shape + ": " + r.note + "\n";
  return out.empty() ? out : "\nNotes:\n" + out;
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) return Status::Internal("cannot write " + path);
  return Status::Ok();
}

// The suite to run: the one named, or one case built from the op's options.
int build_suite(const BenchOptions& o, const OpCommands::Entry* e, bench::Suite* suite) {
  const auto& reg = bench::builtin_registry();
  if (e) {
    const bench::OpInfo* op = nullptr;
    Status s = bench::lookup_op(reg, e->op, &op);
    if (!s.ok()) return fail(kExitFailure, s.message());
    bench::Params p;
    s = bench::resolve_params(*op, e->values, &p);
    if (!s.ok()) return fail(kExitUsage, s.message());
    suite->name = e->op;
    suite->cases.push_back({e->op, e->values, ""});
    return kExitOk;
  }
  std::string path;
  Status s = bench::find_suite(o.suite, bench::default_suite_dir(), &path);
  if (!s.ok()) return fail(kExitUsage, s.message());
  s = bench::load_suite(path, suite);
  if (s.ok()) s = bench::validate_suite(*suite, reg);
  if (!s.ok()) return fail(kExitFailure, s.message());
  return kExitOk;
}

int run_bench(const BenchOptions& o, CLI::App* sub, const OpCommands& ops) {
  const OpCommands::Entry* e = ops.parsed();
  const auto extras = sub->remaining();
  if (!extras.empty())
    return fail(kExitUsage,
                "unknown op or argument '" + extras.front() + "' (kestrel list shows the ops)");
  if (e && !o.suite.empty()) return fail(kExitUsage, "bench: give an op or --suite, not both");
  if (!e && o.suite.empty()) return fail(kExitUsage, "bench: name an op or give --suite NAME");
  if (o.runs < 1 || o.warmup < 0)
    return fail(kExitUsage, "bench: --runs must be >= 1 and --warmup >= 0");
  if (!(o.idle_us >= 0 && o.idle_us <= 1e6))
    return fail(kExitUsage, "bench: --idle-us must be between 0 and 1e6");
  bench::Suite suite;
  if (int rc = build_suite(o, e, &suite); rc != kExitOk) return rc;
  if (!require_gpu()) return kExitFailure;

  bench::RunOptions ro;
  ro.timer.runs = o.runs;
  ro.timer.warmup = o.warmup;
  ro.timer.idle_us = o.idle_us;
  if (o.no_graph && o.graph) return fail(kExitUsage, "--graph and --no-graph exclude each other");
  if (o.no_graph) ro.timer.graph_below_us = 0;
  if (o.graph) ro.timer.graph_below_us = std::numeric_limits<double>::infinity();
  ro.check = o.check;
  ro.peers = !o.no_peers;
  ro.progress = !e;
  std::unique_ptr<bench::Runner> runner;
  const Status s = bench::Runner::create(ro, &runner);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  const std::string date = utc_now();
  const std::vector<bench::ResultRow> rows = runner->run_suite(suite);

  const std::string md = header(suite, *runner->env().device, runner->ceilings(), date) + "\n" +
                         bench::markdown_table(rows) + "\n" +
                         bench::markdown_summary(bench::summarize_families(rows)) + notes(rows);
  std::fputs(md.c_str(), stdout);
  std::fflush(stdout);
  int rc = kExitOk;
  for (const auto& r : rows)
    if (r.state == bench::RowState::kFailed || r.check == "FAIL") rc = kExitFailure;
  if (!o.markdown.empty()) {
    const Status w = write_text(o.markdown, md);
    if (!w.ok()) rc = fail(kExitFailure, w.message());
  }
  if (!o.json.empty()) {
    const auto* dev = runner->env().device;
    const nlohmann::json meta = {{"suite", suite.name},
                                 {"gpu", dev->name},
                                 {"sm_count", dev->sm_count},
                                 {"arch", dev->arch()},
                                 {"date", date},
                                 {"command", command_line()},
                                 {"ceilings", bench::ceilings_to_json(runner->ceilings())},
                                 {"timer",
                                  {{"runs", ro.timer.runs},
                                   {"warmup", ro.timer.warmup},
                                   {"flush_l2", ro.timer.flush_l2},
                                   {"idle_us", ro.timer.idle_us},
                                   {"graph_below_us", ro.timer.graph_below_us}}}};
    const Status w = write_text(o.json, bench::report_json(rows, meta).dump(2) + "\n");
    if (!w.ok()) rc = fail(kExitFailure, w.message());
  }
  return rc;
}

}  // namespace

Command bench_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time OP (kestrel bench OP --help lists its parameters) or a suite against the "
      "speed of light and peers");
  auto o = std::make_shared<BenchOptions>();
  sub->add_option("--suite", o->suite, "suite name (in bench/suites) or JSON file path");
  sub->add_option("--json", o->json, "write the results as JSON to this file");
  sub->add_option("--markdown", o->markdown, "write the markdown report to this file");
  sub->add_option("--runs", o->runs, "timed runs per call (median reported)")
      ->capture_default_str();
  sub->add_option("--warmup", o->warmup, "untimed calls first")->capture_default_str();
  sub->add_option("--idle-us", o->idle_us,
                  "the GPU idles this long after each L2 flush, before the timed call "
                  "(scripts/torch_peers.py's peers wait ~500 us)")
      ->capture_default_str();
  sub->add_flag("--check", o->check, "check each case against the reference before timing");
  sub->add_flag("--no-peers", o->no_peers, "do not time the peers");
  sub->add_flag("--no-graph", o->no_graph, "never time short calls as CUDA graph replays");
  sub->add_flag("--graph", o->graph,
                "time every call as CUDA graph replays over rotated buffers (no host launch "
                "gaps, no L2 flush kernel between calls)");
  auto ops = add_op_commands(sub, true);
  return {sub, [o, sub, ops] { return run_bench(*o, sub, *ops); }};
}

}  // namespace kestrel::cli
