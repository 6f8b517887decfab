#include "cli_runner.h"

#include <unistd.h>

namespace crosslab::testing {
namespace {

void start(QProcess& p, const QString& program, const QStringList& args, const CliOptions& options) {
  p.setProcessEnvironment(options.env);
  if (options.newSession) p.setChildProcessModifier([] { ::setsid(); });
  p.start(program, args);
  if (!options.input.isEmpty()) p.write(options.input);
  p.closeWriteChannel();
}

}  // namespace

QString cliPath() { return QStringLiteral(CROSSLAB_CLI); }

CliResult runProgram(const QString& program, const QStringList& args, const CliOptions& options) {
  QProcess p;
  start(p, program, args, options);
  if (!p.waitForStarted(options.timeoutMs)) return {-1, {}, "could not start " + program.toUtf8() + ": " + p.errorString().toUtf8()};
  if (!p.waitForFinished(options.timeoutMs)) {
    p.kill();
    p.waitForFinished(30000);
    return {-1, p.readAllStandardOutput(), p.readAllStandardError() + "\n(timed out)"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, p.readAllStandardOutput(),
          p.readAllStandardError()};
}

CliResult runCli(const QStringList& args, const CliOptions& options) { return runProgram(cliPath(), args, options); }

CliResult runCli(const QStringList& args, const QProcessEnvironment& env) {
  CliOptions options;
  options.env = env;
  return runCli(args, options);
}

void startCli(QProcess& p, const QStringList& args, const CliOptions& options) { start(p, cliPath(), args, options); }

}  // namespace crosslab::testing
