#include "bench/search_space.h"

#include <algorithm>

namespace kestrel::bench {
namespace {

const ParamSpec* find_param(const OpInfo& op, const std::string& name) {
  auto it = std::find_if(op.params.begin(), op.params.end(),
                         [&](const ParamSpec& p) { return p.name == name; });
  return it == op.params.end() ? nullptr : &*it;
}

bool keeps(const std::map<std::string, std::string>& cfg,
           const std::map<std::string, std::string>& pinned) {
  for (const auto& [k, v] : pinned)
    if (cfg.at(k) != v) return false;
  return true;
}

}  // namespace

Status search_space(const OpInfo& op, const std::map<std::string, std::string>& values,
                    SearchSpace* out) {
  *out = SearchSpace{};
  if (!op.configs) return Status::InvalidArgument(op.name + " has no configuration space");
  Params shape;
  KESTREL_RETURN_IF_ERROR(resolve_params(op, values, &shape));
  const auto all = op.configs(shape);
  out->heuristic = values;
  // A key every configuration sets is a configuration parameter.
  for (const auto& [k, v] : all.empty() ? std::map<std::string, std::string>{} : all.front()) {
    const ParamSpec* p = find_param(op, k);
    if (!p || std::any_of(all.begin(), all.end(), [&](const auto& c) { return !c.count(k); }))
      continue;
    auto given = values.find(k);
    if (given == values.end() || given->second == p->default_value) continue;
    out->pinned[k] = given->second;
    out->heuristic[k] = p->default_value;
  }
  for (const auto& cfg : all)
    if (keeps(cfg, out->pinned)) out->configs.push_back(cfg);
  if (out->configs.empty() && !out->pinned.empty()) {
    std::string given;
    for (const auto& [k, v] : out->pinned) given += " --" + k + " " + v;
    return Status::InvalidArgument("tune: no configuration of " + op.name + " at this shape has" +
                                   given + " (leave a parameter at 0 to search it)");
  }
  return Status::Ok();
}

}  // namespace kestrel::bench
