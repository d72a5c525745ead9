// Benchmark results: one row per (op, shape), rendered as a markdown table and
// as JSON, plus geometric means of % SOL and of peer speed-ups per op family.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kestrel::bench {

struct PeerResult {
  std::string name;
  double time_us = 0;
  double speedup = 0;  // peer time / our time: > 1 means Kestrel is faster
};

enum class RowState { kOk, kSkipped, kFailed };

struct ResultRow {
  std::string op, family, shape;
  RowState state = RowState::kOk;
  std::string message;  // why skipped or failed
  double time_us = 0;   // median per call
  double min_us = 0, p10_us = 0, p90_us = 0;
  bool graph = false;  // timed as CUDA graph replays
  double tflops = 0, tbps = 0;
  double sol_us = 0, sol_fraction = 0;
  std::string check;  // "pass", "FAIL" or empty when not checked
  std::vector<PeerResult> peers;
  std::string note;
};

struct FamilySummary {
  std::string family;
  int cases = 0;  // timed rows
  double geomean_sol_fraction = 0;
  std::vector<PeerResult> geomean_speedup;  // time_us unused
};

// Fixed-point text with `digits` decimals ("12.35").
std::string format_fixed(double v, int digits);

// Columns: op, shape, time µs, TFLOP/s, TB/s, % SOL, [check,] then per peer
// (in order of first appearance) its µs and our speed-up over it.
std::string markdown_table(const std::vector<ResultRow>& rows);

std::vector<FamilySummary> summarize_families(const std::vector<ResultRow>& rows);
std::string markdown_summary(const std::vector<FamilySummary>& families);

nlohmann::json row_to_json(const ResultRow& row);
// {"meta": meta, "results": [...], "summary": [...]}
nlohmann::json report_json(const std::vector<ResultRow>& rows, const nlohmann::json& meta);

}  // namespace kestrel::bench
