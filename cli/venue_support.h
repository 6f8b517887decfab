#pragma once
// Shared plumbing for the venue, box and remote commands: which lab to record in, API
// keys from the environment, SSH targets for recorded boxes, the secret guard.

#include <memory>
#include <string>

#include "backends/providers/hotaisle_client.h"
#include "backends/ssh/ssh_session.h"
#include "cli/args.h"
#include "core/store/lab_store.h"
#include "core/venues/secret_guard.h"
#include "core/venues/venue_store.h"

namespace crosslab::backends {

// --lab LAB, else the machine's home lab ($CROSSLAB_HOME/home), created on first use:
// boxes and venues are per machine unless a lab is named.
store::LabStore openVenueLab(const cli::Args& args);

// The key from --api-key-env VAR, else $defaultVar, else the keyring entry
// `keyringName`; throws a one-line reason naming all three when none has it.
std::string apiKeyFrom(const cli::Args& args, const std::string& defaultVar, const std::string& keyringName);
providers::HotAisleOptions hotAisleOptions(const cli::Args& args);
// Bounds only (--provider-timeout SECONDS, default 90): no URL, team or key.
providers::HotAisleOptions hotAisleBounds(const cli::Args& args);

// The recorded box NAME (active life); throws a one-line reason when there is none.
venues::BoxRow requireBox(venues::VenueStore& venues, const std::string& name);
// Called first in main(), before anything is opened: takes the descriptor named by
// $CROSSLAB_SSH_PASSPHRASE_FD if it is open now, that is, inherited from the caller (a
// descriptor crosslab opens later, such as lab.sqlite's, is never read or closed for a
// passphrase). Marks it close-on-exec (above 2) so children do not inherit it.
void takePassphraseDescriptor();
// An encrypted key's passphrase: one line from the descriptor taken at start-up, else
// asked on /dev/tty with echo off; with neither it throws "no terminal to ask for its
// passphrase; …". A descriptor named but not inherited is a one-line error. Never
// stored or logged; no descriptor is closed except the terminal this opens.
std::string askPassphraseOnTerminal(const std::string& prompt);
// --known-hosts FILE, else $CROSSLAB_HOME/known_hosts; --accept-new. Encrypted keys ask
// through askPassphraseOnTerminal.
ssh::SshTarget sshTargetFor(const venues::BoxRow& box, const cli::Args& args);

// The guard every upload and remote command goes through: secret-looking environment
// variables plus crosslab's keyring entries.
venues::SecretGuard secretGuard();

}  // namespace crosslab::backends
