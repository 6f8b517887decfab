#include "backends/remote/run_follower.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/store/lab_store.h"

namespace crosslab::remote {

using train::RunStatus;

RunFollower::RunFollower(RemoteRun& run, store::LabStore* lab, std::int64_t runId, bool mirrorSteps,
                         train::RunMonitorOptions options, train::RunMonitor::Clock clock)
    : run_(run), lab_(lab), runId_(runId), mirror_(mirrorSteps), monitor_(options, std::move(clock)) {}

FollowUpdate RunFollower::step() {
  FollowUpdate u;
  const RemotePoll p = run_.poll();
  u.output = p.output;
  const auto before = std::make_pair(monitor_.status(), monitor_.reason());
  run_.feed(monitor_, p);
  const auto& all = monitor_.records();
  u.records.assign(all.begin() + static_cast<std::ptrdiff_t>(seen_), all.end());
  seen_ = all.size();
  if (lab_ && runId_ && mirror_ && !u.records.empty()) lab_->runs().appendSteps(runId_, u.records);
  if (lab_ && runId_ && mirror_)
    for (const auto& r : u.records)
      if (r.totalSteps && *r.totalSteps > 0) {
        const auto row = lab_->runs().byId(runId_);
        if (row && row->totalSteps != r.totalSteps) lab_->runs().requestPlan(runId_, r.totalSteps, row->recipeJson);
        break;
      }
  u.verdictChanged = before != std::make_pair(monitor_.status(), monitor_.reason());
  apply();
  return u;
}

void RunFollower::apply() {
  const RunStatus s = monitor_.status();
  const std::string reason = monitor_.reason();
  if (!lab_ || !runId_ || s == RunStatus::Pending) return;
  if (s == applied_ && reason == appliedReason_) return;
  auto runs = lab_->runs();
  if (s == applied_) {
    // The same verdict with a better reason (a traceback's exception line arrived later,
    // a stop's checkpoint): rewrite the reason we wrote, never one another writer wrote.
    if (ours_ && !runs.requestReason(runId_, s, appliedReason_, reason)) ours_ = false;
    appliedReason_ = reason;
    return;
  }
  // A short run can be over before the first poll sees it: the follower's first verdict is
  // then "finished" (or "stalled") straight from pending, which the status table only allows
  // through running. It did run: say so first, which also stamps its start.
  if (applied_ == RunStatus::Pending && (s == RunStatus::Finished || s == RunStatus::Stalled))
    runs.requestStatus(runId_, RunStatus::Running);
  const bool changed = runs.requestStatus(runId_, s, s == RunStatus::Running ? std::string() : reason);
  if (changed && (s == RunStatus::Failed || s == RunStatus::Stalled || (s == RunStatus::Running && applied_ == RunStatus::Stalled))) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& l : monitor_.lastLines()) lines.push_back(l);
    const nlohmann::json data = {{"state", train::toString(s)}, {"reason", reason}, {"last_lines", lines},
                                 {"seconds_since_progress", monitor_.secondsSinceProgress()}};
    lab_->addEvent(runId_, std::nullopt, "train.watchdog", s == RunStatus::Running ? "alive again" : reason,
                   data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    spdlog::info("run {}: {}{}", runId_, train::toString(s), reason.empty() ? "" : ": " + reason);
  }
  applied_ = s;
  appliedReason_ = reason;
  ours_ = changed;
}

bool RunFollower::stop(int graceSeconds, const std::string& reason) {
  if (lab_ && runId_ && lab_->runs().requestStatus(runId_, RunStatus::Stopped, reason)) {
    applied_ = RunStatus::Stopped;
    appliedReason_ = reason;
    ours_ = true;
  }
  const bool clean = run_.stop(graceSeconds);
  if (!clean && lab_ && runId_) {
    const std::string killed = reason + "; it did not end within " + std::to_string(graceSeconds) + " s and was killed";
    if (ours_ && lab_->runs().requestReason(runId_, RunStatus::Stopped, appliedReason_, killed)) appliedReason_ = killed;
  }
  return clean;
}

}  // namespace crosslab::remote
