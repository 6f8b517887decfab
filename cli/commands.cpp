#include "cli/commands.h"

namespace crosslab::cli {

std::vector<Command> allCommands() {
  // One line per command group, in the order `help` lists them.
  std::vector<Command> commands;
  addLabCommands(commands);
  addRecipeCommands(commands);
  addEngineCommands(commands);  // the local engine (libtorch)
  addTrainCommands(commands);   // LoRA training and merge (libtorch)
  serve::addServeCommands(commands);
  backends::addBenchCommands(commands);
  addEvalCommands(commands);
  backends::addEvalBackendCommands(commands);
  backends::addVenueCommands(commands);
  backends::addBoxCommands(commands);
  backends::addRemoteCommands(commands);
  backends::addPreflightCommands(commands);
  backends::addSecretsCommands(commands);
  backends::addLedgerCommands(commands);
  addVersionCommands(commands);
  addDemoCommand(commands);  // last: it runs `train` when the build has one
  return commands;
}

}  // namespace crosslab::cli
