#pragma once
// crosslab-cli subcommands that talk to the outside world (HTTP endpoints, SSH boxes,
// cloud APIs). They live in backends/ and may use Qt Core/Network, never Qt GUI.

#include <vector>

#include "core/cli/command.h"

namespace crosslab::backends {

// Appends every backend command family, in the order `help` lists them.
void addBackendCommands(std::vector<cli::Command>& commands);
// eval generate / eval judge (backends/cli/eval_backend_commands.cpp).
void addEvalBackendCommands(std::vector<cli::Command>& commands);

}  // namespace crosslab::backends
