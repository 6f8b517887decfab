#include "backends/remote/shell_host.h"

#include <QProcess>

namespace crosslab::remote {

ssh::ExecResult LocalShell::run(const std::string& script) {
  QProcess p;
  p.start("/bin/sh", {"-c", QString::fromStdString(script)});
  ssh::ExecResult r;
  if (!p.waitForStarted(10000)) throw ssh::SshError("cannot run /bin/sh: " + p.errorString().toStdString());
  p.closeWriteChannel();
  p.waitForFinished(-1);
  r.status = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput().toStdString();
  r.err = p.readAllStandardError().toStdString();
  return r;
}

ssh::ExecResult SshShell::run(const std::string& script) {
  session_.ensureConnected();
  return session_.run(script);
}

}  // namespace crosslab::remote
