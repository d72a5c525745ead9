#include "bench/op_registry.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace kestrel::bench {
namespace {

bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool parse_real(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_int_list(const std::string& s, std::vector<int64_t>* out) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t x = 0;
    if (!parse_int(item, &x)) return false;
    v.push_back(x);
  }
  if (v.empty() || (!s.empty() && s.back() == ',')) return false;
  *out = std::move(v);
  return true;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

Status check_value(const ParamSpec& p, const std::string& v) {
  int64_t i = 0;
  double d = 0;
  std::vector<int64_t> list;
  switch (p.kind) {
    case ParamKind::kInt:
      if (parse_int(v, &i)) return Status::Ok();
      return Status::InvalidArgument(p.name + ": must be an integer, got '" + v + "'");
    case ParamKind::kFloat:
      if (parse_real(v, &d)) return Status::Ok();
      return Status::InvalidArgument(p.name + ": must be a finite number, got '" + v + "'");
    case ParamKind::kChoice:
      if (std::find(p.choices.begin(), p.choices.end(), v) != p.choices.end()) return Status::Ok();
      return Status::InvalidArgument(p.name + ": must be one of " + join(p.choices, "|") +
                                     ", got '" + v + "'");
    case ParamKind::kIntList:
      if (parse_int_list(v, &list)) return Status::Ok();
      return Status::InvalidArgument(p.name + ": must be comma-separated integers, got '" + v +
                                     "'");
  }
  return Status::Internal("unknown parameter kind");
}

}  // namespace

int64_t Params::integer(const std::string& name) const {
  int64_t v = 0;
  parse_int(values_.at(name), &v);
  return v;
}

double Params::real(const std::string& name) const {
  double v = 0;
  parse_real(values_.at(name), &v);
  return v;
}

const std::string& Params::text(const std::string& name) const { return values_.at(name); }

std::vector<int64_t> Params::int_list(const std::string& name) const {
  std::vector<int64_t> v;
  parse_int_list(values_.at(name), &v);
  return v;
}

void OpRegistry::add(OpInfo op) { ops_.push_back(std::move(op)); }

const OpInfo* OpRegistry::find(const std::string& name) const {
  for (const auto& op : ops_)
    if (op.name == name) return &op;
  return nullptr;
}

std::vector<std::string> OpRegistry::planned() const {
  std::vector<std::string> out;
  for (const auto& name : all_op_names())
    if (!find(name)) out.push_back(name);
  return out;
}

const std::vector<std::string>& all_op_names() {
  static const std::vector<std::string> names = {"quantize",
                                                 "dequantize",
                                                 "convert_scales",
                                                 "gemv",
                                                 "gemm",
                                                 "dual_gemm",
                                                 "grouped_gemm",
                                                 "fp8_gemm_add",
                                                 "rmsnorm_fwd",
                                                 "rmsnorm_bwd",
                                                 "softmax_fwd",
                                                 "softmax_bwd",
                                                 "cross_entropy_fwd",
                                                 "cross_entropy_bwd"};
  return names;
}

const OpRegistry& builtin_registry() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    register_nvfp4_codec_ops(r);
    register_rowwise_ops(r);
    register_nvfp4_gemv_ops(r);
    register_nvfp4_gemm_ops(r);
    register_fp8_gemm_ops(r);
    return r;
  }();
  return reg;
}

Status lookup_op(const OpRegistry& reg, const std::string& name, const OpInfo** out) {
  if (const OpInfo* op = reg.find(name)) {
    *out = op;
    return Status::Ok();
  }
  const auto& all = all_op_names();
  if (std::find(all.begin(), all.end(), name) != all.end())
    return Status::Unsupported("op '" + name + "' is not implemented yet");
  return Status::NotFound("unknown op '" + name + "' (known: " + join(all, ", ") + ")");
}

Status resolve_params(const OpInfo& op, const std::map<std::string, std::string>& given,
                      Params* out) {
  std::map<std::string, std::string> values;
  for (const auto& [name, value] : given) {
    auto it = std::find_if(op.params.begin(), op.params.end(),
                           [&](const ParamSpec& p) { return p.name == name; });
    if (it == op.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : op.params) names.push_back(p.name);
      return Status::InvalidArgument(op.name + ": unknown parameter '" + name +
                                     "' (parameters: " + join(names, ", ") + ")");
    }
    KESTREL_RETURN_IF_ERROR(check_value(*it, value));
    values[name] = value;
  }
  for (const auto& p : op.params) {
    if (values.count(p.name)) continue;
    KESTREL_RETURN_IF_ERROR(check_value(p, p.default_value));
    values[p.name] = p.default_value;
  }
  *out = Params(std::move(values));
  return Status::Ok();
}

std::string describe_params(const std::map<std::string, std::string>& values, const OpInfo* op) {
  std::vector<std::string> parts;
  if (op) {
    for (const auto& p : op->params) {
      auto it = values.find(p.name);
      if (it != values.end()) parts.push_back(p.name + "=" + it->second);
    }
  } else {
    for (const auto& [name, value] : values) parts.push_back(name + "=" + value);
  }
  return join(parts, " ");
}

}  // namespace kestrel::bench
