#pragma once
// `train` and `merge`: LoRA SFT on the local engine and adapter merging. Qt-free but they
// link libtorch, so they live in crosslab_engine next to the engine commands.

#include <vector>

#include "core/cli/command.h"

namespace crosslab::cli {

void addTrainCommands(std::vector<Command>& commands);

}  // namespace crosslab::cli
