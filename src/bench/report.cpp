#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace kestrel::bench {
namespace {

using Cells = std::vector<std::string>;

// Code points, not bytes: "µ" must pad like one column.
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A markdown table padded to aligned columns, readable as plain text too.
// `numeric` columns are right-aligned.
std::string render(const Cells& header, const std::vector<bool>& numeric,
                   const std::vector<Cells>& body) {
  std::vector<size_t> width(header.size(), 3);
  for (size_t c = 0; c < header.size(); ++c)
    width[c] = std::max(width[c], display_width(header[c]));
  for (const auto& row : body)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  auto line = [&](const Cells& cells) {
    std::string out = "|";
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& v = c < cells.size() ? cells[c] : std::string();
      const std::string pad(width[c] - display_width(v), ' ');
      out += " " + (numeric[c] ? pad + v : v + pad) + " |";
    }
    return out + "\n";
  };
  std::string out = line(header) + "|";
  for (size_t c = 0; c < header.size(); ++c)
    out +=
        (numeric[c] ? std::string(width[c] + 1, '-') + ":" : ":" + std::string(width[c] + 1, '-')) +
        "|";
  out += "\n";
  for (const auto& row : body) out += line(row);
  return out;
}

std::string time_text(double us) { return format_fixed(us, us >= 100 ? 1 : us >= 1 ? 2 : 3); }
std::string percent_text(double fraction) { return format_fixed(100 * fraction, 1) + "%"; }
std::string speedup_text(double s) { return format_fixed(s, 2) + "×"; }

std::vector<std::string> peer_names(const std::vector<ResultRow>& rows) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    for (const auto& p : r.peers)
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  return names;
}

const PeerResult* find_peer(const ResultRow& r, const std::string& name) {
  for (const auto& p : r.peers)
    if (p.name == name) return &p;
  return nullptr;
}

const char* state_name(RowState s) {
  switch (s) {
    case RowState::kOk:
      return "ok";
    case RowState::kSkipped:
      return "skipped";
    case RowState::kFailed:
      return "failed";
  }
  return "?";
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / double(v.size()));
}

}  // namespace

std::string format_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string markdown_table(const std::vector<ResultRow>& rows) {
  const auto peers = peer_names(rows);
  bool any_check = false;
  for (const auto& r : rows) any_check |= !r.check.empty();

  Cells header = {"op", "shape", "time µs", "TFLOP/s", "TB/s", "% SOL"};
  std::vector<bool> numeric = {false, false, true, true, true, true};
  if (any_check) {
    header.push_back("check");
    numeric.push_back(false);
  }
  for (const auto& p : peers) {
    header.push_back(p + " µs");
    header.push_back("vs " + p);
    numeric.insert(numeric.end(), {true, true});
  }

  std::vector<Cells> body;
  for (const auto& r : rows) {
    Cells c = {r.op, r.shape};
    if (r.state != RowState::kOk) {
      c.push_back(r.state == RowState::kSkipped ? r.message : "error: " + r.message);
      body.push_back(c);
      continue;
    }
    c.push_back(time_text(r.time_us));
    c.push_back(r.tflops > 0 ? format_fixed(r.tflops, 1) : "-");
    c.push_back(format_fixed(r.tbps, 2));
    c.push_back(r.sol_fraction > 0 ? percent_text(r.sol_fraction) : "-");
    if (any_check) c.push_back(r.check);
    for (const auto& name : peers) {
      const PeerResult* p = find_peer(r, name);
      c.push_back(p ? time_text(p->time_us) : "");
      c.push_back(p ? speedup_text(p->speedup) : "");
    }
    body.push_back(c);
  }
  return render(header, numeric, body);
}

std::vector<FamilySummary> summarize_families(const std::vector<ResultRow>& rows) {
  std::vector<FamilySummary> out;
  std::map<std::string, size_t> index;
  std::vector<std::vector<double>> sols;
  std::vector<std::map<std::string, std::vector<double>>> speedups;
  std::vector<std::vector<std::string>> peer_order;
  for (const auto& r : rows) {
    if (r.state != RowState::kOk) continue;
    auto [it, fresh] = index.emplace(r.family, out.size());
    if (fresh) {
      out.push_back({r.family, 0, 0, {}});
      sols.emplace_back();
      speedups.emplace_back();
      peer_order.emplace_back();
    }
    const size_t f = it->second;
    ++out[f].cases;
    if (r.sol_fraction > 0) sols[f].push_back(r.sol_fraction);
    for (const auto& p : r.peers) {
      if (p.speedup <= 0) continue;
      auto& v = speedups[f][p.name];
      if (v.empty()) peer_order[f].push_back(p.name);
      v.push_back(p.speedup);
    }
  }
  for (size_t f = 0; f < out.size(); ++f) {
    out[f].geomean_sol_fraction = geomean(sols[f]);
    for (const auto& name : peer_order[f])
      out[f].geomean_speedup.push_back({name, 0, geomean(speedups[f][name])});
  }
  return out;
}

std::string markdown_summary(const std::vector<FamilySummary>& families) {
  std::vector<std::string> peers;
  for (const auto& f : families)
    for (const auto& p : f.geomean_speedup)
      if (std::find(peers.begin(), peers.end(), p.name) == peers.end()) peers.push_back(p.name);
  Cells header = {"family", "cases", "geomean % SOL"};
  std::vector<bool> numeric = {false, true, true};
  for (const auto& p : peers) {
    header.push_back("geomean vs " + p);
    numeric.push_back(true);
  }
  std::vector<Cells> body;
  for (const auto& f : families) {
    Cells c = {f.family, std::to_string(f.cases),
               f.geomean_sol_fraction > 0 ? percent_text(f.geomean_sol_fraction) : "-"};
    for (const auto& name : peers) {
      std::string cell;
      for (const auto& p : f.geomean_speedup)
        if (p.name == name) cell = speedup_text(p.speedup);
      c.push_back(cell);
    }
    body.push_back(c);
  }
  return render(header, numeric, body);
}

nlohmann::json row_to_json(const ResultRow& r) {
  nlohmann::json j = {
      {"op", r.op}, {"family", r.family}, {"shape", r.shape}, {"state", state_name(r.state)}};
  if (r.state != RowState::kOk) {
    j["message"] = r.message;
    return j;
  }
  j["time_us"] = r.time_us;
  j["min_us"] = r.min_us;
  j["p10_us"] = r.p10_us;
  j["p90_us"] = r.p90_us;
  j["graph"] = r.graph;
  j["tflops"] = r.tflops;
  j["tbps"] = r.tbps;
  j["sol_us"] = r.sol_us;
  j["sol_fraction"] = r.sol_fraction;
  if (!r.check.empty()) j["check"] = r.check;
  if (!r.note.empty()) j["note"] = r.note;
  j["peers"] = nlohmann::json::array();
  for (const auto& p : r.peers)
    j["peers"].push_back({{"name", p.name}, {"time_us", p.time_us}, {"speedup", p.speedup}});
  return j;
}

nlohmann::json report_json(const std::vector<ResultRow>& rows, const nlohmann::json& meta) {
  nlohmann::json j = {
      {"meta", meta}, {"results", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
  for (const auto& r : rows) j["results"].push_back(row_to_json(r));
  for (const auto& f : summarize_families(rows)) {
    nlohmann::json s = {{"family", f.family},
                        {"cases", f.cases},
                        {"geomean_sol_fraction", f.geomean_sol_fraction},
                        {"geomean_speedup", nlohmann::json::object()}};
    for (const auto& p : f.geomean_speedup) s["geomean_speedup"][p.name] = p.speedup;
    j["summary"].push_back(s);
  }
  return j;
}

}  // namespace kestrel::bench
