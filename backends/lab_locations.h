#pragma once
// Where labs live on this machine: $CROSSLAB_HOME (default ~/crosslab) and the demo lab in it.

#include <QString>
#include <QStringList>

namespace crosslab::backends {

// $CROSSLAB_HOME if set, else ~/crosslab.
QString crosslabHome();
// The built-in demo lab: crosslabHome()/demo.
QString demoLabPath();
// $CROSSLAB_CLI if set; else crosslab-cli beside the running program (build tree and
// install); else the bare name, for PATH.
QString cliExecutable();

// The lab the GUI opens at start: the one named on the command line, else the last lab
// while it still is one, else the demo lab.
QString startupLab(const QStringList& positional, const QString& lastLab);

}  // namespace crosslab::backends
