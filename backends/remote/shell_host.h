#pragma once
// Where a detached run lives: this machine or a box. Both are reached the same way — a
// shell script in, its status and output back — so one launcher, one poller and one
// stopper serve a local run and a run on a rented GPU box alike.

#include <string>

#include "backends/ssh/ssh_session.h"

namespace crosslab::remote {

class ShellHost {
 public:
  virtual ~ShellHost() = default;
  // Runs `script` with /bin/sh. Throws ssh::SshError when the host cannot be reached.
  virtual ssh::ExecResult run(const std::string& script) = 0;
  // "this machine", or the box's name.
  virtual std::string label() const = 0;
  virtual bool isLocal() const = 0;
};

// This machine: /bin/sh -c SCRIPT, in the caller's thread, with the caller's environment.
class LocalShell : public ShellHost {
 public:
  ssh::ExecResult run(const std::string& script) override;
  std::string label() const override { return "this machine"; }
  bool isLocal() const override { return true; }
};

// A box over an SSH session the caller owns (same thread). Reconnects a dropped link.
class SshShell : public ShellHost {
 public:
  SshShell(ssh::SshSession& session, std::string label) : session_(session), label_(std::move(label)) {}
  ssh::ExecResult run(const std::string& script) override;
  std::string label() const override { return label_; }
  bool isLocal() const override { return false; }
  ssh::SshSession& session() { return session_; }

 private:
  ssh::SshSession& session_;
  std::string label_;
};

}  // namespace crosslab::remote
