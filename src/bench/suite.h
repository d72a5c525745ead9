// Benchmark suites: JSON files in bench/suites listing (op, params) cases.
//   {"name": "seeds", "description": "...",
//    "cases": [{"op": "gemv", "params": {"m": 7168, "k": 16384, "l": 1}}, ...]}
// Parameter values may be numbers, strings, booleans or arrays of integers
// (written to the op as "80,176,128"). Cases may name ops that are not
// implemented yet; running them gives a visible "skipped" row.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/op_registry.h"
#include "kestrel/status.h"

namespace kestrel::bench {

struct SuiteCase {
  std::string op;
  std::map<std::string, std::string> params;
  std::string label;  // "m=7168 k=16384 l=1": the params in the file's order
};

struct Suite {
  std::string name, description, path;
  std::vector<SuiteCase> cases;
};

// ordered_json keeps the file's key order in labels; json sorts them.
Status parse_suite(const nlohmann::json& j, Suite* out);
Status parse_suite(const nlohmann::ordered_json& j, Suite* out);
Status load_suite(const std::string& path, Suite* out);

// Every case names an op of all_op_names(), and the params of implemented ops
// resolve (right names, kinds and choices).
Status validate_suite(const Suite& suite, const OpRegistry& reg);

// $KESTREL_SUITE_DIR, else bench/suites of the source tree this was built from.
std::string default_suite_dir();
// The *.json files of `dir`, sorted.
std::vector<std::string> list_suite_files(const std::string& dir);
// An existing file path as given, else <dir>/<name>.json; NotFound otherwise.
Status find_suite(const std::string& name_or_path, const std::string& dir, std::string* path);

}  // namespace kestrel::bench
