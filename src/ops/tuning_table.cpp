#include "ops/tuning_table.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ops/gemm_common.h"
#include "ops/rowwise_config.h"
#include "runtime/embedded_sources.h"

namespace kestrel::ops {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "kestrel-tuning-1";

constexpr RowwiseOp kRowwiseOps[] = {RowwiseOp::kRmsNormFwd,      RowwiseOp::kRmsNormBwd,
                                     RowwiseOp::kSoftmaxFwd,      RowwiseOp::kSoftmaxBwd,
                                     RowwiseOp::kCrossEntropyFwd, RowwiseOp::kCrossEntropyBwd};
constexpr DType kRowDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr RowAccess kAccesses[] = {kRowVector, kRowShifted, kRowElementwise};

// The value named `name` of the list whose names `name_of` gives, or false.
template <typename T, size_t N, typename F>
bool by_name(const T (&all)[N], F name_of, const std::string& name, T* out) {
  for (const T& v : all)
    if (name == name_of(v)) {
      *out = v;
      return true;
    }
  return false;
}

Status parse_rowwise_entry(const json& e, RowwiseTuned* out) {
  if (!e.is_object()) return Status::InvalidArgument("not an object");
  RowwiseTuned t;
  const std::string op = e.at("op").get<std::string>(), dtype = e.at("dtype").get<std::string>(),
                    access = e.at("access").get<std::string>();
  if (!by_name(kRowwiseOps, rowwise_op_name, op, &t.key.op))
    return Status::InvalidArgument("'op': no row-wise op '" + op + "'");
  if (!by_name(kRowDtypes, dtype_name, dtype, &t.key.dtype))
    return Status::InvalidArgument("'dtype': must be f32, bf16 or f16, got '" + dtype + "'");
  if (!by_name(kAccesses, row_access_name, access, &t.key.access))
    return Status::InvalidArgument("'access': must be vector, shifted or elementwise, got '" +
                                   access + "'");
  t.key.gpu = e.at("gpu").get<std::string>();
  t.key.n = e.at("n").get<int64_t>();
  t.key.variant = e.value("variant", std::string());
  if (t.key.n < 1 || t.key.n > kRowwiseMaxN)
    return Status::InvalidArgument("'n': must be in [1, " + std::to_string(kRowwiseMaxN) + "]");
  const json& c = e.at("config");
  t.config.threads = c.at("threads").get<int>();
  t.config.threads_per_row = c.at("tpr").get<int>();
  t.config.cluster = c.at("cluster").get<int>();
  t.config.l2_group = c.value("l2_group", false);
  t.config.rows_per_thread = c.value("rpt", 1);
  const std::string err =
      rowwise_config_error(t.key.op, t.config, held_row_length(t.key.n, t.key.dtype, t.key.access),
                           t.key.dtype, kRowwiseSmemOptin);
  if (!err.empty()) return Status::InvalidArgument("'config' " + t.config.describe() + ": " + err);
  t.us = e.value("us", 0.0);
  t.heuristic_us = e.value("heuristic_us", 0.0);
  t.tuned_m = e.value("tuned_m", int64_t(0));
  *out = t;
  return Status::Ok();
}

Status parse_gemm_entry(const json& e, GemmTuned* out) {
  if (!e.is_object()) return Status::InvalidArgument("not an object");
  GemmTuned t;
  const std::string op = e.at("op").get<std::string>(),
                    layout = e.value("w_layout", std::string("linear"));
  if (op != "gemm" && op != "dual_gemm")
    return Status::InvalidArgument("'op': must be gemm or dual_gemm, got '" + op + "'");
  if (layout != "linear" && layout != "blocked")
    return Status::InvalidArgument("'w_layout': must be linear or blocked, got '" + layout + "'");
  t.key.gpu = e.at("gpu").get<std::string>();
  t.key.dual = op == "dual_gemm";
  t.key.m = e.at("m").get<int64_t>();
  t.key.n = e.at("n").get<int64_t>();
  t.key.k = e.at("k").get<int64_t>();
  t.key.batches = e.value("l", int64_t(1));
  t.key.w_packed = e.value("packed", false);
  t.key.w_blocked = layout == "blocked";
  if (t.key.m < 1 || t.key.n < 1 || t.key.batches < 1 || t.key.k < 64 || t.key.k % 64)
    return Status::InvalidArgument("'m', 'n', 'l' must be >= 1 and 'k' a multiple of 64");
  if (t.key.w_packed && t.key.w_blocked)
    return Status::InvalidArgument("packed weights carry linear scales ('w_layout': linear)");
  const json& c = e.at("config");
  t.config.block_n = c.at("bn").get<int>();
  t.config.stages = c.at("stages").get<int>();
  t.config.split_k = c.at("split").get<int>();
  t.config.split_l2 = c.value("split_l2", false);
  t.config.k_tail = c.value("tail", false);
  t.config.consumer_groups = c.value("consumers", 2);
  rt::DeviceInfo hopper;  // the rules of the configuration space, at Hopper's shared memory
  hopper.max_smem_per_block_optin = kGemmSmemLimit;
  KESTREL_RETURN_IF_ERROR(check_gemm_config(t.config, t.key.dual, &hopper, t.key.w_packed));
  t.us = e.value("us", 0.0);
  t.heuristic_us = e.value("heuristic_us", 0.0);
  *out = t;
  return Status::Ok();
}

// Every entry of the list `name` parsed by `parse_one` and put into `t`.
template <typename Entry, typename Parse>
Status parse_list(const json& doc, const char* name, const std::string& source, Parse parse_one,
                  TuningTable* t) {
  const json list = doc.value(name, json::array());
  if (!list.is_array())
    return Status::InvalidArgument("tuning table " + source + ": \"" + name + "\" must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    Entry e;
    Status s;
    try {
      s = parse_one(list[i], &e);
    } catch (const std::exception& ex) {  // a missing field or one of the wrong type
      s = Status::InvalidArgument(ex.what());
    }
    if (!s.ok())
      return Status::InvalidArgument("tuning table " + source + ": " + name + " entry " +
                                     std::to_string(i) + ": " + s.message());
    t->put(e);
  }
  return Status::Ok();
}

// put / find over one list: an entry of the same key is replaced.
template <typename Entry>
void put_entry(std::vector<Entry>* list, const Entry& e) {
  for (Entry& have : *list)
    if (have.key == e.key) {
      have = e;
      return;
    }
  list->push_back(e);
}
template <typename Entry, typename Key>
const Entry* find_entry(const std::vector<Entry>& list, const Key& k) {
  for (const Entry& e : list)
    if (e.key == k) return &e;
  return nullptr;
}

// A table as read once for the process, with how the reading went.
struct LoadedTable {
  TuningTable table;
  Status status;
};

// $KESTREL_TUNING_TABLE's value: a file, "none", or empty where unset.
std::string tuning_table_path() {
  const char* path = std::getenv("KESTREL_TUNING_TABLE");
  return path ? path : "";
}

}  // namespace

const char* row_access_name(RowAccess a) {
  switch (a) {
    case kRowVector:
      return "vector";
    case kRowShifted:
      return "shifted";
    case kRowElementwise:
      return "elementwise";
    case kRowWhole:
      break;
  }
  return "?";
}

Status TuningTable::parse(const std::string& text, const std::string& source, TuningTable* out) {
  TuningTable t;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("tuning table " + source + ": not JSON: " + e.what());
  }
  if (!doc.is_object() || doc.value("format", std::string()) != kFormat)
    return Status::InvalidArgument("tuning table " + source + ": \"format\" must be \"" + kFormat +
                                   "\"");
  KESTREL_RETURN_IF_ERROR(
      parse_list<RowwiseTuned>(doc, "rowwise", source, parse_rowwise_entry, &t));
  KESTREL_RETURN_IF_ERROR(parse_list<GemmTuned>(doc, "gemm", source, parse_gemm_entry, &t));
  *out = std::move(t);
  return Status::Ok();
}

std::string TuningTable::to_json() const {
  json rows = json::array();
  for (const RowwiseTuned& e : rowwise_)
    rows.push_back({{"gpu", e.key.gpu},
                    {"op", rowwise_op_name(e.key.op)},
                    {"dtype", dtype_name(e.key.dtype)},
                    {"n", e.key.n},
                    {"access", row_access_name(e.key.access)},
                    {"variant", e.key.variant},
                    {"config",
                     {{"threads", e.config.threads},
                      {"tpr", e.config.threads_per_row},
                      {"cluster", e.config.cluster},
                      {"l2_group", e.config.l2_group},
                      {"rpt", e.config.rows_per_thread}}},
                    {"us", e.us},
                    {"heuristic_us", e.heuristic_us},
                    {"tuned_m", e.tuned_m}});
  json gemms = json::array();
  for (const GemmTuned& e : gemm_)
    gemms.push_back({{"gpu", e.key.gpu},
                     {"op", e.key.dual ? "dual_gemm" : "gemm"},
                     {"m", e.key.m},
                     {"n", e.key.n},
                     {"k", e.key.k},
                     {"l", e.key.batches},
                     {"packed", e.key.w_packed},
                     {"w_layout", e.key.w_blocked ? "blocked" : "linear"},
                     {"config",
                      {{"bn", e.config.block_n},
                       {"stages", e.config.stages},
                       {"split", e.config.split_k},
                       {"split_l2", e.config.split_l2},
                       {"tail", e.config.k_tail},
                       {"consumers", e.config.consumer_groups}}},
                     {"us", e.us},
                     {"heuristic_us", e.heuristic_us}});
  return json{{"format", kFormat}, {"rowwise", rows}, {"gemm", gemms}}.dump(1) + "\n";
}

void TuningTable::put(const RowwiseTuned& e) { put_entry(&rowwise_, e); }
void TuningTable::put(const GemmTuned& e) { put_entry(&gemm_, e); }
void TuningTable::put_all(const TuningTable& t) {
  for (const RowwiseTuned& e : t.rowwise_) put(e);
  for (const GemmTuned& e : t.gemm_) put(e);
}
const RowwiseTuned* TuningTable::find(const RowwiseTuningKey& k) const {
  return find_entry<RowwiseTuned>(rowwise_, k);
}
const GemmTuned* TuningTable::find(const GemmTuningKey& k) const {
  return find_entry<GemmTuned>(gemm_, k);
}

const RowwiseConfig* tuned_rowwise_config(const TuningTable& t, const RowwiseTuningKey& k,
                                          int64_t m, int sm_count) {
  const RowwiseTuned* e = t.find(k);
  if (!e) return nullptr;
  const int64_t per_cta = e->config.rows_per_cta();
  const int64_t ctas = (m + per_cta - 1) / per_cta * e->config.cluster;
  return ctas >= sm_count ? &e->config : nullptr;
}

Status load_tuning_table(const std::string& path, const std::string& source, TuningTable* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(source + ": cannot read '" + path + "'");
  std::stringstream text;
  text << f.rdbuf();
  return TuningTable::parse(text.str(), source + " '" + path + "'", out);
}

Status shipped_tuning_table(const TuningTable** out) {
  static const LoadedTable shipped = [] {
    LoadedTable s;
    for (const rt::EmbeddedSource& f : rt::embedded_tuning_tables()) {
      TuningTable one;
      s.status = TuningTable::parse(f.text, std::string("shipped table tuning/") + f.path, &one);
      if (!s.status.ok()) break;
      s.table.put_all(one);
    }
    return s;
  }();
  *out = &shipped.table;
  return shipped.status;
}

Status active_tuning_table(const TuningTable** out) {
  const TuningTable* shipped = nullptr;
  const std::string path = tuning_table_path();
  static const TuningTable kEmpty;
  *out = &kEmpty;
  if (path == kNoTuningTables) return Status::Ok();
  KESTREL_RETURN_IF_ERROR(shipped_tuning_table(&shipped));
  if (path.empty()) {
    *out = shipped;
    return Status::Ok();
  }
  // Each file read once; kept for the process, so that a table handed out
  // stays valid when the variable later names another.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<LoadedTable>> files;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<LoadedTable>& slot = files[path];
  if (!slot) {
    slot = std::make_unique<LoadedTable>();
    TuningTable own;
    slot->status = load_tuning_table(path, "KESTREL_TUNING_TABLE", &own);
    // The file's entries over the shipped ones of the same key.
    slot->table = *shipped;
    slot->table.put_all(own);
  }
  *out = &slot->table;
  return slot->status;
}

std::string active_tuning_table_source() {
  const std::string path = tuning_table_path();
  if (path == kNoTuningTables) return "no table (KESTREL_TUNING_TABLE=none)";
  return path.empty() ? "the shipped tables" : "the shipped tables under '" + path + "'";
}

}  // namespace kestrel::ops
