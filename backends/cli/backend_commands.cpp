#include "backends/cli/backend_commands.h"

#include "backends/bench/bench_command.h"
#include "backends/cli/venue_commands.h"
#include "backends/serve/serve_command.h"

namespace crosslab::backends {

void addBackendCommands(std::vector<cli::Command>& commands) {
  // One line per command family.
  addBenchCommands(commands);
  addEvalBackendCommands(commands);
  addVenueCommands(commands);
  addBoxCommands(commands);
  addRemoteCommands(commands);
  addPreflightCommands(commands);
  addSecretsCommands(commands);
  serve::addServeCommands(commands);
}

}  // namespace crosslab::backends
