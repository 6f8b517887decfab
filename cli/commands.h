#pragma once
// Every crosslab-cli command group, one registration hook per group (each in its own
// cli/<group>_command(s).cpp). allCommands() is the list `help` prints, in order.

#include <vector>

#include "cli/command.h"

namespace crosslab::cli {

std::vector<Command> allCommands();

void addLabCommands(std::vector<Command>& commands);     // lab init|info
void addRecipeCommands(std::vector<Command>& commands);  // recipe show|export
void addEngineCommands(std::vector<Command>& commands);  // tokenize detokenize generate forward, model info
void addTrainCommands(std::vector<Command>& commands);   // train, merge
void addEvalCommands(std::vector<Command>& commands);    // eval check|agreement|export
void addVersionCommands(std::vector<Command>& commands); // version
// `demo PATH`: register it last, it looks up `train` among the commands registered before it.
void addDemoCommand(std::vector<Command>& commands);

}  // namespace crosslab::cli

namespace crosslab::backends {

void addBenchCommands(std::vector<cli::Command>& commands);      // bench, bench standin
void addEvalBackendCommands(std::vector<cli::Command>& commands);  // eval generate|judge
void addVenueCommands(std::vector<cli::Command>& commands);      // venues …
void addBoxCommands(std::vector<cli::Command>& commands);        // box …
void addRemoteCommands(std::vector<cli::Command>& commands);     // remote train|serve
void addPreflightCommands(std::vector<cli::Command>& commands);  // preflight
void addSecretsCommands(std::vector<cli::Command>& commands);    // secrets set|forget
void addLedgerCommands(std::vector<cli::Command>& commands);     // ledger …, friction …, report

}  // namespace crosslab::backends

namespace crosslab::serve {

void addServeCommands(std::vector<cli::Command>& commands);  // serve

}  // namespace crosslab::serve
