#pragma once
// The ledger's one derivation: what a box life used, what it was billed, and how the
// billed minutes split into compute, staging, debug and idle. The GUI's meter, the
// Ledger panel, `crosslab-cli ledger` and the report all read this.
//
// Rules, in minutes (a life runs from provisioned P to deleted D, or now while alive):
//   used    = D − P;  billed = max(min_minutes, ceil(used));  billed_usd = billed × price / 60
//   compute = union of the intervals of work that finished (overlaps counted once)
//   debug   = union of the intervals of work that did not finish, plus the gap from the
//             end of such work to the start of the next work item (minus compute)
//   staging = the rest of [P, end of the last work item]
//   idle    = from the end of the last work item to D, plus billed − used
// Work is clipped to [P, D] (work running past the life's end counts up to D). Serve
// items are not work. Work still running counts as compute while the life is alive (it
// may yet finish) and as debug once the life has ended (nobody saw it finish).
// Each category's usd = its minutes × price / 60, so the four add up to billed_usd.

#include <optional>
#include <string>
#include <vector>

#include "core/ledger/box_life.h"

namespace crosslab::ledger {

struct Split {
  double used = 0, billed = 0, compute = 0, staging = 0, debug = 0, idle = 0;  // minutes or usd
};

struct LifeLedger {
  Split minutes;
  Split usd;                   // used: the metered cost of the wall time (used × price / 60)
  std::optional<double> ratio;  // (staging + debug) / compute; none when compute is zero
  double lastWorkEnd = 0;       // epoch seconds; P when the life did no work
  double end = 0;               // D, or `now` for a live life
};

LifeLedger derive(const BoxLife& life, double now);

// The lab's way: "4:1", "34:1", "0.4:1"; "—" without compute.
std::string formatRatio(std::optional<double> ratio);

// One line a life's transfers would take again at their measured rates: what a new
// life of the same venue will likely repeat before it can work.
struct StagingForecast {
  double minutes = 0;
  double usd = 0;  // at the price given
  std::int64_t bytes = 0;
};
StagingForecast forecastStaging(const BoxLife& lastLife, double pricePerHour);

}  // namespace crosslab::ledger
