#pragma once
// The status of a run, the one type every layer speaks: the store's `runs.status`
// column, the watchdog's verdict, the panels' colours. Which status may follow which is
// decided here, once; the lab store applies a change only when this table allows it.
//
//   pending ──> running ──> finished
//      │          │  ▲
//      │          ▼  │
//      │        stalled          (no new step for too long; back to running on progress)
//      ▼          ▼
//   failed / stopped  ──(resume)──> pending

#include <optional>
#include <string>

namespace crosslab::train {

enum class RunStatus { Pending, Running, Stalled, Finished, Failed, Stopped };

// "pending", "running", … (the store's spelling).
const char* toString(RunStatus s);
std::optional<RunStatus> runStatusFromString(const std::string& text);

// Finished, failed and stopped: nothing follows them but a resume.
bool isTerminal(RunStatus s);
// A status that may still change on its own (pending, running, stalled).
inline bool isActive(RunStatus s) { return !isTerminal(s); }
// Whether `to` may follow `from`. A status never "follows" itself (no-op changes are the
// caller's business); finished is final; failed/stopped/stalled go back to pending only
// to resume.
bool transitionAllowed(RunStatus from, RunStatus to);

}  // namespace crosslab::train
