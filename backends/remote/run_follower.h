#pragma once
// The one follower of a run: polls a detached run (RemoteRun: this machine or a box)
// for new event lines and output, feeds the watchdog (train::RunMonitor) and the lab's
// store (the steps, when the trainer has no lab of its own, and the watchdog's verdict,
// applied only as the store's transition table allows), and hands the same typed step
// records to its caller (the CLI's progress lines, the window's run controller).
// Qt-free, single-threaded: one follower per run, driven by whoever polls.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/remote/remote_run.h"
#include "core/store/run_store.h"
#include "core/train/run_monitor.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::remote {

struct FollowUpdate {
  std::vector<train::StepRecord> records;  // event lines parsed since the last step()
  std::string output;                      // output bytes since the last step()
  bool verdictChanged = false;             // the watchdog's status or reason moved
};

class RunFollower {
 public:
  // `lab` may be null (follow without recording). `mirrorSteps`: write the steps into the
  // store (a run on a box, whose trainer records nothing in this lab).
  RunFollower(RemoteRun& run, store::LabStore* lab, std::int64_t runId, bool mirrorSteps,
              train::RunMonitorOptions options = {}, train::RunMonitor::Clock clock = {});

  // One poll. Throws ssh::SshError when the host cannot be reached (the run goes on:
  // call again later).
  FollowUpdate step();
  // The watchdog's verdict is final (finished, failed or stopped).
  bool ended() const { return train::isTerminal(monitor_.status()); }
  const train::RunMonitor& monitor() const { return monitor_; }
  std::int64_t runId() const { return runId_; }
  // A stop the user asked for: the store says stopped first (so the end the run shows
  // next is not taken for a failure), then SIGTERM, up to `graceSeconds`, SIGKILL.
  // True when it ended on SIGTERM.
  bool stop(int graceSeconds, const std::string& reason);

 private:
  void apply();

  RemoteRun& run_;
  store::LabStore* lab_;
  std::int64_t runId_;
  bool mirror_;
  train::RunMonitor monitor_;
  std::size_t seen_ = 0;  // records already handed out
  train::RunStatus applied_ = train::RunStatus::Pending;
  std::string appliedReason_;
  bool ours_ = false;  // the store's status and reason are the ones this follower wrote
};

}  // namespace crosslab::remote
