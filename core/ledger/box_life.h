#pragma once
// A box life and what it did: the typed record the ledger derives its minutes from.
// A life runs from provisioned to deleted (or now, while it is alive); its work items
// are the intervals in which it did something the lab reports (training, benchmark
// sweeps, eval generation; a server waiting for requests is not work); its transfers
// are the bytes it moved. Times are epoch seconds (UTC).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crosslab::ledger {

enum class WorkKind { Train, Bench, Eval, Serve };
// Running: started, not ended yet. The other four are how work ends.
enum class WorkStatus { Running, Finished, Failed, Stalled, Stopped };
enum class Direction { Push, Pull };

std::string_view toString(WorkKind kind);
std::string_view toString(WorkStatus status);
std::string_view toString(Direction direction);
// nullopt for anything but the exact lower-case names above.
std::optional<WorkKind> workKindFrom(std::string_view text);
std::optional<WorkStatus> workStatusFrom(std::string_view text);
std::optional<Direction> directionFrom(std::string_view text);

// Serve alone is not work: a server waiting for requests is staging or idle.
inline bool countsAsWork(WorkKind kind) { return kind != WorkKind::Serve; }

struct WorkItem {
  std::int64_t id = 0;  // box_work row (0 when not stored)
  WorkKind kind = WorkKind::Train;
  std::string name;
  double start = 0;
  std::optional<double> end;  // none while running
  WorkStatus status = WorkStatus::Running;
  std::string reason;  // why it did not finish (failed/stalled/stopped)
  std::optional<std::int64_t> runId, benchmarkId;
};

struct Transfer {
  std::int64_t id = 0;  // box_transfers row
  Direction direction = Direction::Push;
  std::string what;  // "weights", "adapter runs/3", "dataset"
  std::int64_t bytes = 0;
  double start = 0, end = 0;
  // Measured rate in MB/s (10^6 bytes); nullopt for an instantaneous transfer.
  std::optional<double> mbPerSecond() const;
};

struct BoxLife {
  std::int64_t boxId = 0;
  std::string box;  // the box's name: the same name across lives of one VM
  std::string venue, provider, gpu;
  int gpus = 0;
  double pricePerHour = 0;
  int minMinutes = 0;
  double provisioned = 0;
  std::optional<double> deleted;  // none while alive
  std::vector<WorkItem> work;
  std::vector<Transfer> transfers;
  bool alive() const { return !deleted.has_value(); }
};

}  // namespace crosslab::ledger
