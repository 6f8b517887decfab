#include "backends/cli/backend_commands.h"

namespace crosslab::backends {

void addBackendCommands(std::vector<cli::Command>& commands) {
  // One line per command family, e.g. addBenchCommands(commands);
  addEvalBackendCommands(commands);
}

}  // namespace crosslab::backends
