#pragma once
// A crosslab-cli subcommand: its path ("lab info"), help text, options, and handler.
// Handlers print results to `out`, return the exit code, and throw UsageError (exit 2)
// or any std::exception (exit 1, one line on stderr).

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/args.h"

namespace crosslab::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;
};

struct Command {
  std::string path;      // "lab init"
  std::string synopsis;  // "PATH [--name NAME]"
  std::string summary;   // one line for the command list
  std::vector<OptionSpec> options;
  std::function<int(const Args&, Context&)> run;
};

// Entry point used by app/cli_main.cpp (with allCommands(), cli/commands.h) and by in-process tests.
int runCli(const std::vector<Command>& commands, const std::vector<std::string>& argv, std::ostream& out,
           std::ostream& err);

}  // namespace crosslab::cli
