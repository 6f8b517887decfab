#include "backends/cli/backend_commands.h"

namespace crosslab::backends {

void addBackendCommands(std::vector<cli::Command>& commands) {
  // One line per command family, e.g. addBenchCommands(commands);
  (void)commands;
}

}  // namespace crosslab::backends
