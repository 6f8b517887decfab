#pragma once
// Local-engine subcommands (tokenize, detokenize, generate, forward, model info). They are
// Qt-free but link libtorch, so they live in crosslab_engine, not crosslab_core.

#include <vector>

#include "core/cli/command.h"

namespace crosslab::cli {

void addEngineCommands(std::vector<Command>& commands);
// `demo PATH`: register it last, it looks up `train` among the commands registered before it.
void addDemoCommand(std::vector<Command>& commands);

}  // namespace crosslab::cli
