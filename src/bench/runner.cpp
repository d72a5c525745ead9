#include "bench/runner.h"

#include <algorithm>
#include <exception>

#include "bench/progress.h"
#include "bench/sol.h"
#include "runtime/cuda_check.h"

namespace kestrel::bench {
namespace {

// Runs `fn`, turning an exception into an Internal status.
template <typename Fn>
Status guarded(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": " + e.what());
  }
}

ResultRow failed_row(ResultRow row, RowState state, const std::string& message) {
  row.state = state;
  row.message = message;
  return row;
}

void add_note(ResultRow* row, const std::string& note) {
  row->note += (row->note.empty() ? "" : "; ") + note;
}

std::string time_summary(const ResultRow& r) {
  if (r.state == RowState::kSkipped) return r.message;
  if (r.state == RowState::kFailed) return "error: " + r.message;
  return format_fixed(r.time_us, 2) + " us, " + format_fixed(100 * r.sol_fraction, 1) + "% SOL";
}

}  // namespace

Status run_check(const OpInfo& op, const Params& params, const OpEnv& env, CheckReport* out) {
  return guarded("check", [&] { return op.check(params, env, out); });
}

Runner::Runner(const RunOptions& opt, cudaStream_t stream, const rt::DeviceInfo* dev, Ceilings c)
    : opt_(opt), env_{dev, stream}, ceilings_(std::move(c)), timer_(stream) {}

Runner::~Runner() {
  cudaStreamSynchronize(env_.stream);
  cudaStreamDestroy(env_.stream);
}

Status Runner::create(const RunOptions& opt, std::unique_ptr<Runner>* out) {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  Ceilings c;
  KESTREL_RETURN_IF_ERROR(get_ceilings(false, &c));
  cudaStream_t stream = nullptr;
  KESTREL_CUDA_RETURN(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  out->reset(new Runner(opt, stream, dev, std::move(c)));
  return Status::Ok();
}

ResultRow Runner::run(const std::string& op_name, const std::map<std::string, std::string>& params,
                      const std::string& label) {
  ResultRow row;
  row.op = op_name;
  row.family = op_name;
  row.shape = label.empty() ? describe_params(params) : label;
  const OpInfo* op = nullptr;
  const Status found = lookup_op(builtin_registry(), op_name, &op);
  if (found.code() == StatusCode::kUnsupported)
    return failed_row(row, RowState::kSkipped, "skipped (not implemented)");
  if (!found.ok()) return failed_row(row, RowState::kFailed, found.message());
  row.family = op->family;
  Params p;
  const Status resolved = resolve_params(*op, params, &p);
  if (!resolved.ok()) return failed_row(row, RowState::kFailed, resolved.message());
  row.shape = describe_params(p.values(), op);

  if (opt_.check) {
    CheckReport report;
    const Status s = run_check(*op, p, env_, &report);
    if (!s.ok()) return failed_row(row, RowState::kFailed, "check: " + s.to_string());
    row.check = report.pass ? "pass" : "FAIL";
    if (!report.pass) {  // one line, for the notes under the table
      std::string detail = report.detail;
      std::replace(detail.begin(), detail.end(), '\n', ' ');
      add_note(&row, "check: " + detail);
    }
  }
  const Status s = guarded("bench", [&] { return time_case(*op, p, &row); });
  if (!s.ok()) return failed_row(row, RowState::kFailed, s.to_string());
  return row;
}

Status Runner::time_case(const OpInfo& op, const Params& params, ResultRow* row) {
  BenchCase bc;
  KESTREL_RETURN_IF_ERROR(op.bench(params, env_, &bc));
  if (!bc.shape.empty()) row->shape = bc.shape;
  Timing t;
  KESTREL_RETURN_IF_ERROR(timer_.time(bc.launch, opt_.timer, &t));
  row->time_us = t.us.median;
  row->min_us = t.us.min;
  row->p10_us = t.us.p10;
  row->p90_us = t.us.p90;
  row->graph = t.graph;
  const double seconds = t.us.median * 1e-6;
  row->tflops = bc.work.flops / seconds / 1e12;
  row->tbps = bc.work.bytes / seconds / 1e12;
  row->sol_us = sol_us(bc.work, ceilings_);
  row->sol_fraction = sol_fraction(row->sol_us, row->time_us);
  if (t.graph)
    add_note(row, "CUDA graph of " + std::to_string(t.calls_per_sample) + " calls over " +
                      std::to_string(bc.launch.slots) + " input copies");
  if (!t.note.empty()) add_note(row, t.note);
  if (!opt_.peers) return Status::Ok();
  for (const PeerLaunch& peer : bc.peers) {
    Timing pt;
    const Status s = timer_.time(peer.call, opt_.timer, &pt);
    if (!s.ok()) {  // a peer that cannot run on this GPU must not lose our own row
      add_note(row, peer.name + ": " + s.to_string());
      continue;
    }
    row->peers.push_back({peer.name, pt.us.median, pt.us.median / t.us.median});
  }
  return Status::Ok();
}

std::vector<ResultRow> Runner::run_suite(const Suite& suite) {
  std::vector<ResultRow> rows;
  Progress progress(int(suite.cases.size()), opt_.progress);
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const SuiteCase& c = suite.cases[i];
    progress.step(int(i), c.op + " " + c.label);
    rows.push_back(run(c.op, c.params, c.label));
    progress.result(time_summary(rows.back()));
  }
  return rows;
}

}  // namespace kestrel::bench
