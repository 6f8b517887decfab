#pragma once
// crosslab's API keys and tokens in the OS keyring (Secret Service / KWallet through
// qtkeychain) where one runs. Synchronous with a timeout: call from the CLI or a worker
// thread. A headless box without a keyring gets a one-line reason, never a hang. Values
// are never logged.

#include <QString>
#include <optional>

#include "core/venues/secret_guard.h"

namespace crosslab::secrets {

struct KeyringReply {
  bool ok = false;
  QString value;  // read: the secret
  QString error;  // why not, one line
};

// Whether this build has keyring support at all (qtkeychain found at configure time).
bool keyringCompiledIn();
KeyringReply readSecret(const QString& name, int timeoutMs = 5000);
KeyringReply writeSecret(const QString& name, const QString& value, int timeoutMs = 5000);
KeyringReply forgetSecret(const QString& name, int timeoutMs = 5000);

// The names crosslab keeps there: "hotaisle-api-key", "hf-token".
const char* const kKnownSecretNames[] = {"hotaisle-api-key", "hf-token"};

// The guard every upload and remote command goes through: secret-looking environment
// variables plus crosslab's keyring entries. Off the GUI thread (the keyring may be slow).
venues::SecretGuard outgoingGuard();

}  // namespace crosslab::secrets
