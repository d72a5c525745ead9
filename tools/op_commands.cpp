#include "op_commands.h"

#include "bench/op_registry.h"
#include "cli.h"

namespace kestrel::cli {

const OpCommands::Entry* OpCommands::parsed() const {
  for (const auto& e : entries)
    if (e->app->parsed()) return e.get();
  return nullptr;
}

std::shared_ptr<OpCommands> add_op_commands(CLI::App* parent, bool fallthrough) {
  auto cmds = std::make_shared<OpCommands>();
  const auto& reg = bench::builtin_registry();
  for (const auto& op : reg.ops()) {
    auto e = std::make_unique<OpCommands::Entry>();
    e->op = op.name;
    e->app = parent->add_subcommand(op.name, op.description);
    e->app->fallthrough(fallthrough);
    add_op_options(e->app, op, &e->values);
    cmds->entries.push_back(std::move(e));
  }
  for (const auto& name : reg.planned()) {
    auto e = std::make_unique<OpCommands::Entry>();
    e->op = name;
    e->app = parent->add_subcommand(name, "(not implemented yet)");
    e->app->allow_extras();
    cmds->entries.push_back(std::move(e));
  }
  // Unknown op names land in the parent's extras and get a clear message.
  parent->allow_extras();
  parent->require_subcommand(0, 1);
  return cmds;
}

}  // namespace kestrel::cli
