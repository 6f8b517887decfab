#pragma once
// The SshTarget that reaches a test's SshdFixture: 127.0.0.1, its port, the current user,
// the fixture's user key and known_hosts (shared by the SSH-level tests).

#include "backends/ssh/ssh_session.h"
#include "sshd_fixture.h"

inline crosslab::ssh::SshTarget loopbackTarget(const SshdFixture& sshd, bool acceptNew = true) {
  crosslab::ssh::SshTarget t;
  t.host = "127.0.0.1";
  t.port = sshd.port();
  t.user = sshd.user().toStdString();
  t.keyFile = sshd.userKey().toStdString();
  t.knownHosts = sshd.knownHosts().toStdString();
  t.acceptNew = acceptNew;
  return t;
}
