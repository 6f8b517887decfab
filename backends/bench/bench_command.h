#pragma once
// `crosslab-cli bench` (a concurrency sweep against an OpenAI-compatible endpoint) and
// `crosslab-cli bench standin` (the loopback stand-in server, for demos and checks).

#include <vector>

#include "core/cli/command.h"

namespace crosslab::backends {

void addBenchCommands(std::vector<cli::Command>& commands);

}  // namespace crosslab::backends
