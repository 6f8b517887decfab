#pragma once
// A detached run on a host (this machine or a box): launched under setsid/nohup in a work
// folder with its output in output.log, its process ids in pid (the wrapper, leader of
// the run's process group) and child_pid (the command itself), and its exit status in
// exit_status; followed by polling the bytes appended to its events file and output
// since the last poll, so a dropped connection or a closed window loses nothing and the
// RunMonitor sees the same lines wherever the run lives. It outlives whoever launched it:
// only stop() or kill() ends it.

#include <memory>
#include <optional>
#include <string>

#include "backends/remote/shell_host.h"
#include "backends/ssh/ssh_session.h"
#include "core/train/run_monitor.h"

namespace crosslab::remote {

struct RemotePoll {
  std::string events;  // new bytes of the events file (trainer_log.jsonl / events.jsonl)
  std::string output;  // new bytes of output.log (stdout + stderr)
  std::optional<int> exitStatus;
  bool alive = true;
};

class RemoteRun {
 public:
  // `eventsFile` is relative to `workDir` (a path on the host).
  RemoteRun(ShellHost& host, std::string workDir, std::string eventsFile);
  // On a box through `session` (the caller keeps it; same thread).
  RemoteRun(ssh::SshSession& session, std::string workDir, std::string eventsFile);
  ~RemoteRun();

  // Starts `command` — one simple command (env assignments, program, arguments) — from
  // workDir, detached. Throws ssh::SshError.
  void launch(const std::string& command);
  // Follows a run launched earlier (another process, an earlier window): reads its files
  // from the start.
  void attach();
  RemotePoll poll();
  // Feeds a poll into the monitor (complete event lines only) and ticks its stall clock.
  // True when the run is over for the monitor (finished, failed, stopped or stalled).
  bool feed(train::RunMonitor& monitor, const RemotePoll& poll);
  // A clean stop: SIGTERM to the command (our trainer checkpoints and ends), up to
  // `graceSeconds` for it to go, then SIGKILL to whatever is left of its process group.
  // True when it ended on SIGTERM. Runs on the host: blocks up to graceSeconds.
  bool stop(int graceSeconds);
  // SIGKILL to the whole process group at once (a run the watchdog declared dead).
  void kill();
  const std::string& workDir() const { return workDir_; }
  const std::string& eventsFile() const { return eventsFile_; }
  ShellHost& host() { return *host_; }

 private:
  std::unique_ptr<ShellHost> ownedHost_;
  ShellHost* host_;
  std::string workDir_;
  std::string eventsFile_;
  std::uint64_t eventsOffset_ = 0;
  std::uint64_t outputOffset_ = 0;
  std::string eventsPartial_;
};

}  // namespace crosslab::remote
