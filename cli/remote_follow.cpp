// Following a detached remote run: poll its log into the RunMonitor, record steps and
// the verdict in the lab, stop a dead run so the meter does not pay for it, fetch the
// adapter when it finished.
#include <nlohmann/json.hpp>

#include <chrono>
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <thread>

#include "cli/venue_support.h"
#include "cli/remote_steps.h"
#include "backends/remote/remote_run.h"
#include "core/ledger/life_recorder.h"
#include "backends/remote/run_follower.h"
#include "backends/runs/run_launch.h"
#include "core/train/recipe.h"

namespace crosslab::backends {
namespace {

constexpr int kMaxPollFailures = 12;  // consecutive; about a minute at the default poll

const char* storeStatus(train::RunStatus s) { return train::toString(s); }

ledger::WorkStatus workStatusOf(train::RunStatus s) {
  switch (s) {
    case train::RunStatus::Finished: return ledger::WorkStatus::Finished;
    case train::RunStatus::Stalled: return ledger::WorkStatus::Stalled;
    case train::RunStatus::Failed: return ledger::WorkStatus::Failed;
    default: return ledger::WorkStatus::Stopped;
  }
}

// The run's row, with its launch record: a window that opens the lab follows it too.
std::int64_t recordRun(store::LabStore& lab, const venues::BoxRow& box, const std::string& engine,
                       const train::Recipe& recipe, const remote::RemoteRun& run) {
  RunLaunch l;
  l.where = "box";
  l.engine = engine;
  l.box = box.name;
  l.boxId = box.id;
  l.workDir = run.workDir();
  l.eventsFile = run.eventsFile();
  l.outputDir = recipe.outputDir;
  l.modelOnHost = recipe.modelPath;
  l.pricePerHour = box.pricePerHour.value_or(0);
  store::NewRun nr;
  nr.name = "remote " + box.name + " " + store::utcNow();
  nr.engine = engine;
  nr.model = recipe.modelPath;
  nr.runDir = box.name + ":" + run.workDir();
  nr.recipeJson = train::recipeToJson(recipe);
  nr.boxId = box.id;
  nr.venueId = box.venueId;
  nr.launchJson = l.toJson();
  return lab.runs().requestCreate(nr);
}

void fetchAdapter(ssh::SshSession& session, const std::string& remoteDir, const std::string& localDir,
                  std::ostream& err) {
  std::filesystem::create_directories(localDir);
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors"}) {
    session.download(remoteDir + "/" + f, localDir + "/" + f);
    err << "fetched " << f << " -> " << localDir << "\n";
  }
}

// Stops the run on the box. A dropped link is retried, as the watch's polls are; a kill that
// still fails is returned, to be reported with the run's result rather than instead of it.
std::string killRun(ssh::SshSession& session, remote::RemoteRun& run) {
  for (int attempt = 1;; ++attempt) {
    try {
      run.kill();
      return {};
    } catch (const ssh::SshError& e) {
      if (attempt >= 3) return e.what();
      session.disconnect();
    }
  }
}

}  // namespace

void followAndReport(const cli::Args& args, cli::Context& ctx, ssh::SshSession& session, remote::RemoteRun& run,
                     const venues::BoxRow& box, store::LabStore& lab, const std::string& engine,
                     const train::Recipe& recipe) {
  train::RunMonitorOptions opt;
  opt.stallFloorSeconds = args.number("--stall-s", 60);
  // The start-up allowance (no step yet: models load, data is tokenized) is bounded by
  // --stall-s when one is given: the user asked for that much patience, no more.
  if (args.has("--stall-s")) opt.startupGraceSeconds = std::min(opt.startupGraceSeconds, opt.stallFloorSeconds);
  const int pollMs = args.integer("--poll-ms", 5000);
  const auto runId = recordRun(lab, box, engine, recipe, run);
  // The box's life records the work (the ledger's compute minutes) from start to end.
  ledger::LifeRecorder life(lab);
  const auto workId = life.workStarted(box.id, ledger::WorkKind::Train, "train (" + engine + ") " + run.workDir(),
                                       ledger::epochNow(), {runId, std::nullopt});
  // The one follower: the same watchdog, store writes and step records as the window's.
  remote::RunFollower follower(run, &lab, runId, true, opt);
  std::int64_t shownStep = -1;
  for (int failures = 0;;) {
    try {
      const auto u = follower.step();
      failures = 0;
      for (const auto& r : u.records)
        if (r.step && r.loss && *r.step != shownStep) {
          shownStep = *r.step;
          ctx.err << "step " << shownStep << "/" << r.totalSteps.value_or(0) << "  loss " << *r.loss << "\n";
        }
    } catch (const ssh::SshError& e) {
      // The run is detached: a dropped link only pauses the watch. Reconnect and go on.
      if (++failures >= kMaxPollFailures) throw;
      ctx.err << "lost the box (" << e.what() << "); retrying\n";
      session.disconnect();
    }
    const auto s = follower.monitor().status();
    if (follower.ended() || s == train::RunStatus::Stalled) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(pollMs));
  }

  const auto& monitor = follower.monitor();
  auto state = monitor.status();
  const bool finished = state == train::RunStatus::Finished;
  std::string killError;
  if (!finished && !args.has("--keep-on-failure")) {
    killError = killRun(session, run);  // stop paying for a dead run
    if (!killError.empty())
      ctx.err << "could not stop the run on the box (" << killError << "); it may still be running: "
              << run.workDir() << "\n";
    if (state == train::RunStatus::Stalled)
      lab.runs().requestStatus(runId, train::RunStatus::Failed,
                               monitor.reason() + (killError.empty() ? "; killed to stop the meter"
                                                                     : "; could not be killed: " + killError));
  }
  life.workEnded(workId, workStatusOf(state), ledger::epochNow(), monitor.reason());
  if (finished && args.has("--fetch"))
    fetchAdapter(session, run.workDir() + "/" + recipe.outputDir, *args.value("--fetch"), ctx.err);
  const auto last = monitor.lastStep();
  nlohmann::json result = {{"status", storeStatus(state)},
                           {"reason", monitor.reason()},
                           {"run_id", runId},
                           {"box", box.name},
                           {"work_dir", run.workDir()},
                           {"last_step", last ? *last->step : -1},
                           {"total_steps", last && last->totalSteps ? *last->totalSteps : -1},
                           {"cost_while_dead_usd", monitor.costWhileDead(box.pricePerHour.value_or(0))},
                           {"last_lines", monitor.lastLines()}};
  if (!killError.empty()) result["kill_error"] = killError;
  if (args.has("--json")) {
    ctx.out << result.dump() << "\n";
  } else {
    // "finished at step 111/111", "stalled: no new step for …" (never "finished: finished").
    const std::string status = storeStatus(state), reason = monitor.reason();
    ctx.out << status;
    if (finished && last) ctx.out << " at step " << *last->step << "/" << last->totalSteps.value_or(*last->step);
    else if (!reason.empty() && reason != status) ctx.out << ": " << reason;
    ctx.out << "\n";
  }
  if (!finished) throw std::runtime_error("remote run " + std::string(storeStatus(state)) + ": " + monitor.reason());
}

}  // namespace crosslab::backends
