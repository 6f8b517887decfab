#pragma once
// Venues, boxes (one row per VM life), the availability ladder and its timeline, and
// the box meter, over a lab's store. Every write is one transaction.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/venues/meter.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::venues {

// One rung of the availability ladder: a venue (cloud, region, accelerator) and what a
// probe or the user found there.
struct VenueRow {
  std::int64_t id = 0;
  std::string name;          // "hotaisle", "azure/eastus/MI300X", "dgx-spark-1"
  std::string kind = "ssh";  // local | ssh | cloud
  std::string provider, region, accelerator;
  std::string availability = "unknown";  // available | not_offered | no_quota | capacity | …
  std::optional<double> pricePerHour, spotPricePerHour;
  std::string probedAt, notes, quota;  // quota: free text, e.g. "MI300X family 0; spot 3 vCPU"
};

struct BoxRow {
  std::int64_t id = 0;
  std::int64_t venueId = 0;
  std::string venue;  // venue name (read side)
  std::string name, host, user, keyFile, gpuModel, state = "requested";
  int port = 22;
  int gpuCount = 0;
  std::optional<double> pricePerHour;
  int minMinutes = 0;
  std::string provisionedAt, readyAt, deletedAt;
  std::string providerVm, team;  // the provider's VM name and team (cloud boxes)
  bool active() const { return deletedAt.empty(); }
};

class VenueStore {
 public:
  explicit VenueStore(store::LabStore& lab);

  // The venue's id, creating it with `kind` when new.
  std::int64_t ensureVenue(const std::string& name, const std::string& kind, const std::string& provider = {});
  // Upserts a ladder rung by name (probe result or manual entry); stamps probed_at when empty.
  std::int64_t recordLadder(VenueRow row);
  std::vector<VenueRow> venues();

  // A new box life. Refuses a second active box with the same name.
  std::int64_t addBox(const BoxRow& box);
  std::optional<BoxRow> activeBox(const std::string& name);
  std::vector<BoxRow> boxes(bool includeEnded = false);
  void setBoxState(std::int64_t boxId, const std::string& state);
  void markReady(std::int64_t boxId, const std::string& host);
  // Ends the life (deleted/removed), books its metered cost in the ledger; returns USD.
  double endBox(std::int64_t boxId, const std::string& finalState, double endEpoch);
  // Live cost of a box life at `nowEpoch` (ended lives stop at deleted_at).
  MeterReading meter(const BoxRow& box, double nowEpoch) const;
  // Seconds since the box last did something (event rows: exec, transfer, run), or since ready.
  double idleSeconds(const BoxRow& box, double nowEpoch);

  void addMilestone(const std::string& venue, const std::string& milestone, const std::string& atIso,
                    const std::string& note = {});
  std::vector<Milestone> timeline(const std::string& venue);
  // Records `milestone` now unless the venue already has it at or after `sinceIso`
  // (once per box life: "ssh ready" on the first successful login). True when recorded.
  bool noteMilestoneOnce(const std::string& venue, const std::string& milestone, const std::string& sinceIso);

  // Records activity on a box (resets the idle clock) without a run.
  void touchBox(std::int64_t boxId, const std::string& type, const std::string& message);

 private:
  store::LabStore& lab_;
};

}  // namespace crosslab::venues
