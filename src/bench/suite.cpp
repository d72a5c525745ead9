#include "bench/suite.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace kestrel::bench {
namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

template <typename Json>
Status param_text(const std::string& where, const Json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.template get<std::string>();
  } else if (v.is_boolean()) {
    *out = v.template get<bool>() ? "true" : "false";
  } else if (v.is_number()) {
    *out = v.dump();  // integers stay integers; reals round-trip
  } else if (v.is_array() && !v.empty() &&
             std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number_integer(); })) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ",") + e.dump();
    *out = s;
  } else {
    return Status::InvalidArgument(where +
                                   ": must be a number, string, boolean or array of "
                                   "integers, got " +
                                   v.dump());
  }
  return Status::Ok();
}

template <typename Json>
Status parse_any(const Json& j, Suite* out) {
  if (!j.is_object()) return Status::InvalidArgument("suite: must be a JSON object");
  if (!j.contains("cases") || !j["cases"].is_array())
    return Status::InvalidArgument("suite: must have a \"cases\" array");
  Suite s;
  s.name = j.value("name", "");
  s.description = j.value("description", "");
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    const auto& c = j["cases"][i];
    const std::string where = "cases[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("op") || !c["op"].is_string())
      return Status::InvalidArgument(where + ": must be an object with a string \"op\"");
    SuiteCase sc;
    sc.op = c["op"].template get<std::string>();
    if (c.contains("params")) {
      if (!c["params"].is_object())
        return Status::InvalidArgument(where + ".params: must be an object");
      for (const auto& [key, value] : c["params"].items()) {
        KESTREL_RETURN_IF_ERROR(param_text(where + ".params." + key, value, &sc.params[key]));
        sc.label += (sc.label.empty() ? "" : " ") + key + "=" + sc.params[key];
      }
    }
    s.cases.push_back(std::move(sc));
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace

Status parse_suite(const nlohmann::json& j, Suite* out) { return parse_any(j, out); }
Status parse_suite(const nlohmann::ordered_json& j, Suite* out) { return parse_any(j, out); }

Status load_suite(const std::string& path, Suite* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("cannot open suite " + path);
  nlohmann::ordered_json j;
  try {
    f >> j;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  Status s = parse_suite(j, out);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  out->path = path;
  if (out->name.empty()) {
    const size_t slash = path.find_last_of('/');
    out->name = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (out->name.size() > 5 && out->name.compare(out->name.size() - 5, 5, ".json") == 0)
      out->name.resize(out->name.size() - 5);
  }
  return Status::Ok();
}

Status validate_suite(const Suite& suite, const OpRegistry& reg) {
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const SuiteCase& c = suite.cases[i];
    const std::string where = suite.name + " cases[" + std::to_string(i) + "] (" + c.op + "): ";
    const OpInfo* op = nullptr;
    const Status found = lookup_op(reg, c.op, &op);
    if (found.code() == StatusCode::kUnsupported) continue;  // planned: skipped when run
    if (!found.ok()) return Status(found.code(), where + found.message());
    Params p;
    const Status resolved = resolve_params(*op, c.params, &p);
    if (!resolved.ok()) return Status(resolved.code(), where + resolved.message());
  }
  return Status::Ok();
}

std::string default_suite_dir() {
  if (const char* env = std::getenv("KESTREL_SUITE_DIR")) return env;
  // The build compiles this file by its absolute path, so __FILE__ locates
  // the source tree (<root>/src/bench/suite.cpp -> <root>/bench/suites).
  std::string here = __FILE__;
  const size_t pos = here.rfind("src/bench/suite.cpp");
  return pos == std::string::npos ? "bench/suites" : here.substr(0, pos) + "bench/suites";
}

std::vector<std::string> list_suite_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 &&
          is_file(dir + "/" + name))
        out.push_back(dir + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status find_suite(const std::string& name_or_path, const std::string& dir, std::string* path) {
  if (is_file(name_or_path)) {
    *path = name_or_path;
    return Status::Ok();
  }
  const std::string candidate = dir + "/" + name_or_path + ".json";
  if (is_file(candidate)) {
    *path = candidate;
    return Status::Ok();
  }
  return Status::NotFound("no suite '" + name_or_path + "' (not a file, and no " + candidate + ")");
}

}  // namespace kestrel::bench
