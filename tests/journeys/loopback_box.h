#pragma once
// A box for journeys: a real OpenSSH sshd on a loopback port (tests/backends/sshd_fixture),
// recorded in a lab as box `loop` by the real CLI (`box add`, then `box exec --accept-new`
// to learn its host key into $CROSSLAB_HOME/known_hosts, where the window looks), and a
// scratch folder on "the box" (this machine) for the runs and models the journeys put there.

#include <QString>
#include <QWidget>
#include <QTemporaryDir>

#include "sshd_fixture.h"

namespace crosslab::journey {

class LoopbackBox {
 public:
  // Starts sshd and records the box in `labDir` (price $2.99/h, as the lab's MI300X).
  explicit LoopbackBox(const QString& labDir);
  bool ok() const { return ok_; }
  QString error() const { return error_; }
  QString name() const { return "loop"; }
  // The box's folder for crosslab (absolute: the box is this machine).
  QString folder() const { return dir_.path(); }
  // Whether a process of this host with the pid written in `pidFile` is alive.
  static bool pidFileAlive(const QString& pidFile);
  // In the New Run dialog `d`: Where = this box (the entry after "this machine"), its
  // folder, crosslab-cli as the program on the box; then Preflight, waited for until it says
  // nothing blocks. Returns the preflight report, empty when a step failed.
  QString chooseInNewRun(QWidget* d) const;

 private:
  SshdFixture sshd_;
  QTemporaryDir dir_;
  bool ok_ = false;
  QString error_;
};

}  // namespace crosslab::journey
