#pragma once
// The one way tests run crosslab-cli (or a reference program) as a child process: a real
// process, its exit code, stdout and stderr. Every test that runs the CLI goes through here.

#include <QByteArray>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace crosslab::testing {

struct CliResult {
  int code;  // the exit code; -1: timed out (the child was killed), -2: crashed (signal)
  QByteArray out;
  QByteArray err;
};

struct CliOptions {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  QByteArray input;            // written to the child's stdin, which is then closed
  bool newSession = false;     // setsid(): no controlling terminal, as under CI or cron
  int timeoutMs = 300000;      // generous: the suite runs on a loaded 2-core machine
};

// The crosslab-cli of this build.
QString cliPath();

// Runs `program args` to the end. stdin is always closed (after `input`), so a child that
// reads it never waits for a test.
CliResult runProgram(const QString& program, const QStringList& args, const CliOptions& options = {});
CliResult runCli(const QStringList& args, const CliOptions& options = {});
CliResult runCli(const QStringList& args, const QProcessEnvironment& env);

// Starts crosslab-cli for a test that talks to it while it runs (a server, a trainer to
// kill): same program and options (stdin closed after `input`); the caller waits on `p`.
void startCli(QProcess& p, const QStringList& args, const CliOptions& options = {});

}  // namespace crosslab::testing
