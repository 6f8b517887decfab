#pragma once
// The parts of `remote train` and `remote serve` that live in their own files.

#include <string>

#include "backends/remote/remote_run.h"
#include "cli/command.h"
#include "core/store/lab_store.h"
#include "core/train/recipe.h"
#include "core/venues/venue_store.h"

namespace crosslab::backends {

// Polls `run` until the watchdog calls it, records steps and verdict, prints the result;
// throws (exit 1) unless the run finished.
void followAndReport(const cli::Args& args, cli::Context& ctx, ssh::SshSession& session, remote::RemoteRun& run,
                     const venues::BoxRow& box, store::LabStore& lab, const std::string& engine,
                     const train::Recipe& recipe);
int remoteServe(const cli::Args& args, cli::Context& ctx);

}  // namespace crosslab::backends
