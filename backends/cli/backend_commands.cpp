#include "backends/cli/backend_commands.h"

#include "backends/serve/serve_command.h"

namespace crosslab::backends {

void addBackendCommands(std::vector<cli::Command>& commands) {
  // One line per command family, e.g. addBenchCommands(commands);
  serve::addServeCommands(commands);
}

}  // namespace crosslab::backends
