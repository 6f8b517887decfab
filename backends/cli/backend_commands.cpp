#include "backends/cli/backend_commands.h"

#include "backends/bench/bench_command.h"

namespace crosslab::backends {

void addBackendCommands(std::vector<cli::Command>& commands) {
  // One line per command family.
  addBenchCommands(commands);
  addEvalBackendCommands(commands);
}

}  // namespace crosslab::backends
