// The configurations `kestrel tune` searches (DESIGN.md §7).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench/op_registry.h"

namespace kestrel::bench {

struct SearchSpace {
  // The op's configurations at the given shape, less those that contradict a
  // pinned parameter; each as parameter overrides.
  std::vector<std::map<std::string, std::string>> configs;
  // The given values with every configuration parameter at its default (the
  // heuristic's pick): the baseline the search is timed against.
  std::map<std::string, std::string> heuristic;
  // Configuration parameters given other than their default ("0": the
  // heuristic's), which every searched configuration keeps: `--bn 128`
  // searches the bn128 configurations only.
  std::map<std::string, std::string> pinned;
};

// The search space of `op` at `values` (parameter values, defaults filled
// in). InvalidArgument naming the pinned parameters where none of the
// op's configurations keeps them.
Status search_space(const OpInfo& op, const std::map<std::string, std::string>& values,
                    SearchSpace* out);

}  // namespace kestrel::bench
