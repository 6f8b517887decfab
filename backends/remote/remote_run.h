#pragma once
// A process on a box that outlives the SSH connection: launched detached (setsid,
// nohup) in a work folder with its output in output.log and its exit status captured in
// exit_status; followed by polling the bytes appended to its events file and output since
// the last poll, so a dropped connection loses nothing and the RunMonitor sees the same
// lines it would see locally.

#include <optional>
#include <string>

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
  // `eventsFile` is relative to `workDir`.
  RemoteRun(ssh::SshSession& session, std::string workDir, std::string eventsFile);

  // Starts `command` (a shell line, run from workDir) detached. Throws SshError.
  void launch(const std::string& command);
  RemotePoll poll();
  // Feeds a poll into the monitor (complete event lines only) and ticks its stall clock.
  // True when the run is over for the monitor (finished, failed, or stalled).
  bool feed(train::RunMonitor& monitor, const RemotePoll& poll);
  // Kills the whole process group (the run and its children).
  void kill();
  const std::string& workDir() const { return workDir_; }

 private:
  ssh::SshSession& session_;
  std::string workDir_;
  std::string eventsFile_;
  std::uint64_t eventsOffset_ = 0;
  std::uint64_t outputOffset_ = 0;
  std::string eventsPartial_;
};

}  // namespace crosslab::remote
