// The per-op subcommands shared by `check` and `bench`: one sub-subcommand per
// implemented op with its parameters as options, one per planned op (which
// swallows any arguments so that it can say "not implemented yet").
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kestrel::cli {

struct OpCommands {
  struct Entry {
    CLI::App* app;
    std::string op;
    std::map<std::string, std::string> values;  // parameter values, defaults first
  };
  std::vector<std::unique_ptr<Entry>> entries;  // stable addresses: options write into values

  // The entry parsed on the command line, or null.
  const Entry* parsed() const;
};

// Adds the op subcommands to `parent`; `fallthrough` lets options of the
// parent (bench's --json, --runs, ...) follow the op name.
std::shared_ptr<OpCommands> add_op_commands(CLI::App* parent, bool fallthrough);

}  // namespace kestrel::cli
