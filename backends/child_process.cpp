#include "backends/child_process.h"

#include <QProcess>

#include <csignal>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace crosslab::backends {

void dieWithParent(QProcess& process) {
#ifdef __linux__
  const pid_t parent = ::getpid();
  // Runs in the child between fork and exec: async-signal-safe calls only. A parent that
  // died before prctl took effect is caught by the getppid() check.
  process.setChildProcessModifier([parent] {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
  });
#else
  (void)process;
#endif
}

}  // namespace crosslab::backends
