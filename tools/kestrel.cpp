// kestrel: GPU info, ceiling calibration, correctness checks and benchmarks
// of Kestrel's ops. Exit codes: 0 ok, 1 check failure or error, 2 usage error.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli.h"

int main(int argc, char** argv) {
  using namespace kestrel::cli;
  for (int i = 0; i < argc; ++i) command_line() += (i ? " " : "") + std::string(argv[i]);
  CLI::App app{"kestrel: speed-of-light NVFP4/FP8/reduction kernels for Hopper"};
  app.require_subcommand(1);
  app.add_option("--device", device_ordinal(), "CUDA device ordinal")->capture_default_str();
  std::vector<Command> commands = {info_command(app), calibrate_command(app), list_command(app),
                                   check_command(app), bench_command(app),
                                   tune_command(app), compile_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;  // --help exits 0 through here
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  return kExitUsage;
}
