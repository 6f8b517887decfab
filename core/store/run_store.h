#pragma once
// The lab's runs and their metrics: the one owner of a run's status. Every change is a
// `request…` method that either fully succeeds or changes nothing (Kdenlive's model
// idiom): a status changes only along train::transitionAllowed, inside one IMMEDIATE
// transaction, so the trainer, the window's watchdog and a remote follower can all ask
// and the first verdict that the table allows wins (a run the trainer finished is never
// turned "failed" by a late watchdog, a stopped run never "finished").

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/store/sqlite_db.h"
#include "core/train/run_status.h"
#include "core/train/step_record.h"

namespace crosslab::store {

class LabStore;

// One logged training step (metrics row). `seq` orders changes within a run: it moves
// past every other row of the run whenever the row is written, a later eval loss included.
struct MetricRow {
  std::int64_t step = 0;
  std::optional<double> loss, lr, epoch, evalLoss, wallSeconds, tokensPerSecond;
  std::optional<std::int64_t> tokens;
  std::int64_t seq = 0;
};

struct NewRun {
  std::string name;
  std::string kind = "train";
  std::string engine = "crosslab";
  std::string model;
  std::optional<std::int64_t> totalSteps;
  std::string runDir;      // absolute local folder, or BOX:DIR for a run on a box
  std::string recipeJson{};
  std::optional<std::int64_t> boxId{}, venueId{};
  std::string launchJson{};  // how it was launched (where, work dir, events file); see RunLaunch
};

// A run as the Training panel lists it.
struct RunSummary {
  std::int64_t id = 0;
  std::string name, kind, engine, model, venue, status, statusReason, runDir, startedAt, endedAt, recipeJson,
      launchJson;
  train::RunStatus state = train::RunStatus::Pending;
  std::optional<std::int64_t> boxId;
  std::optional<std::int64_t> totalSteps, lastStep;
  std::optional<double> lastLoss, tokensPerSecond;
  bool remote() const { return boxId.has_value(); }
};

// A name or run folder the lab already has.
class RunConflict : public StoreError {
 public:
  using StoreError::StoreError;
};

class RunStore {
 public:
  explicit RunStore(LabStore& lab);

  // A new run, pending. Throws RunConflict when the lab already has a run of that name
  // or folder (a run is never written over), StoreError on other failures.
  std::int64_t requestCreate(const NewRun& run);
  // Applies `to` when train::transitionAllowed(current, to); otherwise changes nothing and
  // returns false. Stamps started_at on the first running, ended_at on an end; a resume
  // (back to pending) clears ended_at. Throws StoreError for an unknown run.
  bool requestStatus(std::int64_t runId, train::RunStatus to, const std::string& reason = {});
  // Sharpens the reason of a run still in `status` with the reason `expected` (a watchdog
  // refining its own verdict); false, nothing changed, when either moved on.
  bool requestReason(std::int64_t runId, train::RunStatus status, const std::string& expected,
                     const std::string& reason);
  // What a trainer knows once it has read its data (steps, the recipe it runs).
  void requestPlan(std::int64_t runId, std::optional<std::int64_t> totalSteps, const std::string& recipeJson);
  // Replaces the launch record (where and how the run lives; see backends/runs/run_launch.h).
  void requestLaunch(std::int64_t runId, const std::string& launchJson);
  // Upserts steps: a step written again is merged into its row (an eval loss lands in
  // the row of its step; a resumed run never doubles a step), and its seq moves on.
  void appendSteps(std::int64_t runId, const std::vector<train::StepRecord>& steps);
  void appendMetrics(std::int64_t runId, const std::vector<MetricRow>& rows);

  std::optional<RunSummary> byId(std::int64_t runId);
  // `runDir` as stored: an absolute, normalised local folder, or BOX:DIR.
  std::optional<RunSummary> byDir(const std::string& runDir);
  std::optional<RunSummary> byName(const std::string& name);
  std::vector<RunSummary> list(const std::string& kind = "train");
  // Rows of a run written after `afterSeq` (-1: all), in step order. The chart keeps the
  // largest seq it has seen; an eval loss folded into an old step comes back this way.
  std::vector<MetricRow> metricsSince(std::int64_t runId, std::int64_t afterSeq);

  // The New Run dialog's last choice (a JSON object: model, data, where …), kept with the lab.
  std::string lastChoice();
  void requestLastChoice(const std::string& json);

 private:
  std::vector<RunSummary> query(const std::string& where, const std::string& arg, std::optional<std::int64_t> id);
  LabStore& lab_;
};

// The normalised absolute spelling of a local run folder (how runs.run_dir stores it).
std::string normalRunDir(const std::string& dir);
// A metrics row from a step record (nullopt when it has no step number).
std::optional<MetricRow> metricRowOf(const train::StepRecord& r);

}  // namespace crosslab::store
