// `kestrel list`: the ops (with their parameters), planned ops and suites.
#include <cstdio>

#include "bench/suite.h"
#include "cli.h"

namespace kestrel::cli {
namespace {

int run_list() {
  const auto& reg = bench::builtin_registry();
  std::printf("Ops:\n");
  for (const auto& op : reg.ops()) {
    std::printf("  %-16s %s\n", op.name.c_str(), op.description.c_str());
    for (const auto& p : op.params) {
      std::string value = p.default_value;
      if (!p.choices.empty()) value += " (" + join(p.choices, "|") + ")";
      std::printf("      --%-14s %-30s %s\n", p.name.c_str(), value.c_str(), p.help.c_str());
    }
  }
  const auto planned = reg.planned();
  if (!planned.empty()) std::printf("Not implemented yet: %s\n", join(planned, ", ").c_str());

  const std::string dir = bench::default_suite_dir();
  std::printf("Suites (%s):\n", dir.c_str());
  for (const auto& path : bench::list_suite_files(dir)) {
    bench::Suite suite;
    const Status s = bench::load_suite(path, &suite);
    if (!s.ok()) {
      std::printf("  %s: %s\n", path.c_str(), s.to_string().c_str());
      continue;
    }
    int skipped = 0;
    for (const auto& c : suite.cases) skipped += reg.find(c.op) == nullptr;
    std::printf("  %-16s %3zu cases", suite.name.c_str(), suite.cases.size());
    if (skipped) std::printf(" (%d not implemented yet)", skipped);
    std::printf("  %s\n", suite.description.c_str());
  }
  return kExitOk;
}

}  // namespace

Command list_command(CLI::App& app) {
  return {app.add_subcommand("list", "List the ops, their parameters and the benchmark suites"),
          run_list};
}

}  // namespace kestrel::cli
