#include "core/train/run_status.h"

namespace crosslab::train {

const char* toString(RunStatus s) {
  switch (s) {
    case RunStatus::Pending: return "pending";
    case RunStatus::Running: return "running";
    case RunStatus::Stalled: return "stalled";
    case RunStatus::Finished: return "finished";
    case RunStatus::Failed: return "failed";
    case RunStatus::Stopped: return "stopped";
  }
  return "pending";
}

std::optional<RunStatus> runStatusFromString(const std::string& text) {
  for (auto s : {RunStatus::Pending, RunStatus::Running, RunStatus::Stalled, RunStatus::Finished, RunStatus::Failed,
                 RunStatus::Stopped})
    if (text == toString(s)) return s;
  return std::nullopt;
}

bool isTerminal(RunStatus s) {
  return s == RunStatus::Finished || s == RunStatus::Failed || s == RunStatus::Stopped;
}

bool transitionAllowed(RunStatus from, RunStatus to) {
  using S = RunStatus;
  if (from == to) return false;
  switch (from) {
    case S::Pending: return to == S::Running || to == S::Failed || to == S::Stopped;
    case S::Running: return to == S::Stalled || to == S::Finished || to == S::Failed || to == S::Stopped;
    case S::Stalled:
      return to == S::Running || to == S::Finished || to == S::Failed || to == S::Stopped || to == S::Pending;
    case S::Failed:
    case S::Stopped: return to == S::Pending;  // resume
    case S::Finished: return false;
  }
  return false;
}

}  // namespace crosslab::train
