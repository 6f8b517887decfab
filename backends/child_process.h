#pragma once
// Children that must not outlive the window that started them (a local server, a sweep):
// the kernel sends them SIGTERM when their parent dies, however it dies (closed, SIGTERM,
// SIGINT, a crash, SIGKILL) — PR_SET_PDEATHSIG, set between fork and exec. Trainers are
// not started this way: they are detached on purpose (backends/runs).

class QProcess;

namespace crosslab::backends {

// Makes every child `process` starts from now on die with this process (Linux; elsewhere
// nothing).
void dieWithParent(QProcess& process);

}  // namespace crosslab::backends
