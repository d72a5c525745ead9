// Shared pieces of the `kestrel` command line: exit codes, GPU presence,
// subcommand registration and the op options built from an op's parameters.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

#include "bench/op_registry.h"
#include "kestrel/status.h"

namespace kestrel::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // a check failed, or an error occurred
constexpr int kExitUsage = 2;

// A subcommand and what to do when it was the one parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The --device option of the top-level command.
int& device_ordinal();
// The command line as typed, for report headers.
std::string& command_line();

// Selects device_ordinal(); prints "no CUDA device" (or why the device is
// unusable) to stderr and returns false when there is none.
bool require_gpu();

// Prints "kestrel: <message>" to stderr and returns `code`.
int fail(int code, const std::string& message);
// kExitUsage for invalid arguments and unknown names, kExitFailure otherwise.
int exit_code_of(const Status& s);

// Adds one --<param> option per op parameter, storing into `values` (which
// starts out holding the defaults and must outlive parsing).
void add_op_options(CLI::App* sub, const bench::OpInfo& op,
                    std::map<std::string, std::string>* values);

// "a|b|c"
std::string join(const std::vector<std::string>& v, const char* sep);

Command info_command(CLI::App& app);
Command calibrate_command(CLI::App& app);
Command list_command(CLI::App& app);
Command check_command(CLI::App& app);
Command bench_command(CLI::App& app);
Command tune_command(CLI::App& app);
Command compile_command(CLI::App& app);

}  // namespace kestrel::cli
