#pragma once
// Typed recording of everything crosslab does on a box, as it happens, so that a life
// run through crosslab yields its ledger without any typing:
//
//   provisioned → ready → transfer… → work start/end (status)… → serve start/stop… → deleted
//
// Provisioning and teardown code (VenueStore::addBox / markReady / endBox, the Venues
// panel, `venues provision|delete`, `box add|remove`), transfers (`box push|pull`, weight
// pushes), remote runs and serves, benchmark sweeps and eval generation against a box all
// call this. Each call is one transaction that changes the life's rows (boxes, box_work,
// box_transfers) and writes one `events` row of type "life.<event>" on the box (the idle
// clock and the timeline read those). Times are epoch seconds (UTC).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/ledger/box_life.h"
#include "core/ledger/derivation.h"

namespace crosslab::store {
class Database;
class LabStore;
}  // namespace crosslab::store

namespace crosslab::ledger {

enum class LifeEvent { Provisioned, Ready, Transfer, WorkStart, WorkEnd, ServeStart, ServeStop, Deleted };
// "life.provisioned", "life.ready", "life.transfer", "life.work_start", "life.work_end",
// "life.serve_start", "life.serve_stop", "life.deleted" (the events.type column).
std::string_view eventType(LifeEvent event);

// Seconds since the epoch, now.
double epochNow();
// "2026-11-29T16:40:00Z" <-> epoch seconds (whole seconds).
std::string isoUtc(double epochSeconds);

// Writes one life event row inside a transaction the caller holds (for code that changes
// a box row and records the event in the same commit, e.g. VenueStore::addBox).
void writeLifeEvent(store::Database& db, std::int64_t boxId, LifeEvent event, double at, const std::string& message,
                    const std::string& dataJson = {});

// Books a life whose deleted_at the caller has just set, inside the caller's transaction
// (VenueStore::endBox, the one place a life ends): work still running on the box ends with it (stopped, "box deleted";
// a server simply stops) and a life.deleted event records the derivation. Returns it.
std::optional<LifeLedger> bookEndedLife(store::LabStore& lab, std::int64_t boxId, double at,
                                        const std::string& finalState);

// What a work item belongs to, when crosslab knows (a runs row, a benchmarks row).
struct WorkLinks {
  std::optional<std::int64_t> runId, benchmarkId;
};

class LifeRecorder {
 public:
  explicit LifeRecorder(store::LabStore& lab);

  // The box row exists (VenueStore::addBox); these stamp its milestones.
  void provisioned(std::int64_t boxId, double at);
  void ready(std::int64_t boxId, double at);
  // A life ends in one place only: VenueStore::endBox (whoever ends it books it, once), which
  // calls bookEndedLife inside its transaction; the recorder has no second way to end one.

  // A work item (train, bench, eval) starts; returns its id for workEnded.
  std::int64_t workStarted(std::int64_t boxId, WorkKind kind, const std::string& name, double at,
                           const WorkLinks& links = {});
  // Ends a running work item. `status` must not be Running. Ending one that already
  // ended changes nothing and returns false.
  bool workEnded(std::int64_t workId, WorkStatus status, double at, const std::string& reason = {});
  // The running work item of a run (a follower knows the run, not the item).
  std::optional<std::int64_t> openWorkForRun(std::int64_t runId);

  // A server on the box (not work by itself: the time it waits is staging or idle).
  std::int64_t serveStarted(std::int64_t boxId, const std::string& name, double at, const WorkLinks& links = {});
  bool serveStopped(std::int64_t serveId, double at);

  // A finished (or partly finished: the bytes that moved) transfer; returns its id.
  std::int64_t transfer(std::int64_t boxId, Direction direction, const std::string& what, std::int64_t bytes,
                        double start, double end);

 private:
  std::int64_t insertWork(std::int64_t boxId, WorkKind kind, const std::string& name, double at,
                          const WorkLinks& links, LifeEvent event);
  bool endWork(std::int64_t workId, WorkStatus status, double at, const std::string& reason, LifeEvent event);
  store::LabStore& lab_;
};

}  // namespace crosslab::ledger
