#pragma once
// `crosslab-cli serve`: the OpenAI-compatible server over the batch scheduler.

#include <vector>

#include "core/cli/command.h"

namespace crosslab::serve {

void addServeCommands(std::vector<cli::Command>& commands);

}  // namespace crosslab::serve
