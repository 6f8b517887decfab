#pragma once
// Redaction, as in the lab: hosts and IP addresses become stable labels (BOX-1, BOX-2 …
// in order of first provisioning), user names and key paths are dropped, and secrets
// (known values and token shapes) never appear. Every export of the lab (the report in
// each format, `ledger export`) passes its text through one Redactor; `--no-redact`
// turns off the labels and drops, never the secrets.

#include <string>
#include <vector>

#include "core/venues/secret_guard.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::report {

class Redactor {
 public:
  // Labels every box of the lab (by name, oldest first provisioning first) and collects
  // their hosts, SSH users and key files, plus this machine's user name and home.
  // `redact` false keeps names and hosts (secrets are still removed).
  static Redactor fromLab(store::LabStore& lab, venues::SecretGuard guard, bool redact = true);

  explicit Redactor(venues::SecretGuard guard, bool redact = true);

  // A box (by name) gets the next label the first time it is seen; `host` maps to it too.
  void addBox(const std::string& name, const std::string& host = {});
  void addUser(const std::string& user);
  void addKeyPath(const std::string& path);
  // Names that are not identifying even when they are user names (provider and venue names).
  void keepWord(const std::string& word);

  bool redacting() const { return redact_; }
  // The box's label ("BOX-2"), or its name unredacted / unknown.
  std::string boxLabel(const std::string& name) const;
  // Free text with hosts, addresses, user names, key paths and secrets replaced.
  std::string text(const std::string& in) const;
  // Throws venues::SecretLeak naming `what` when a secret is still in `out` (the last check).
  void guardOutput(const std::string& out, const std::string& what) const;

 private:
  struct Box {
    std::string name, host, label;
  };
  std::string replaceWord(std::string text, const std::string& word, const std::string& by) const;
  venues::SecretGuard guard_;
  bool redact_ = true;
  std::vector<Box> boxes_;
  std::vector<std::string> users_, keys_, keep_;
};

}  // namespace crosslab::report
