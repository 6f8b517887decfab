#pragma once
// Command families of issue #7: venues (providers, meter), box (SSH), remote, preflight.

#include <vector>

#include "core/cli/command.h"

namespace crosslab::backends {

void addVenueCommands(std::vector<cli::Command>& commands);
void addBoxCommands(std::vector<cli::Command>& commands);
void addRemoteCommands(std::vector<cli::Command>& commands);
void addPreflightCommands(std::vector<cli::Command>& commands);
void addSecretsCommands(std::vector<cli::Command>& commands);

}  // namespace crosslab::backends
