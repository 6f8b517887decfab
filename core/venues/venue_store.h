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
  // Everything needed to end a rented VM again, whatever the panel's form says by then:
  // provider ("hotaisle"), the API base URL it was rented through (empty: the provider's
  // default), the team, the VM's name there, and the environment variable holding the key.
  std::string provider, apiUrl, team, providerVm, apiKeyEnv;
  bool active() const { return deletedAt.empty(); }
  bool rented() const { return !providerVm.empty(); }
  bool billing() const { return active() && pricePerHour.has_value() && *pricePerHour > 0; }
};

// Live cost of a box life at `nowEpoch` (ended lives stop at deleted_at). Pure: no lab read.
MeterReading lifeMeter(const BoxRow& box, double nowEpoch);

// How a life ended. A life is ended (and its compute booked) exactly once: whoever
// ends it first books it; a second end changes nothing and says so.
struct LifeEnd {
  bool endedNow = false;  // false: it had already ended (state and time from then)
  std::string state, endedAt;
  double usd = 0;         // the life's metered cost
};

// One offers fetch: what a provider offered, at what price, when.
struct ProbeRow {
  std::int64_t id = 0;
  std::string venue;  // "hotaisle"
  std::string at;
  std::string availability = "available";
  std::optional<double> pricePerHour;  // the cheapest VM offered
  std::string offersJson;              // [{gpu_model, gpu_count, price_per_hour, min_minutes, quantity}, …]
  std::string note;                    // "2 offer(s), 4 VM(s) on the shelf, MI300X from $2.99/GPU-h"
};

class VenueStore {
 public:
  explicit VenueStore(store::LabStore& lab);

  // The venue's id, creating it with `kind` when new.
  std::int64_t ensureVenue(const std::string& name, const std::string& kind, const std::string& provider = {});
  // Upserts a ladder rung by name (probe result or manual entry); stamps probed_at when empty.
  std::int64_t recordLadder(VenueRow row);
  std::vector<VenueRow> venues();
  // Records a probe and brings the venue's ladder rung up to date with it (availability,
  // cheapest price, accelerators, when, what). One transaction.
  std::int64_t recordProbe(const ProbeRow& probe, const std::string& accelerators);
  std::vector<ProbeRow> probes(const std::string& venue);

  // A new box life. Refuses a second active box with the same name.
  std::int64_t addBox(const BoxRow& box);
  std::optional<BoxRow> activeBox(const std::string& name);
  std::vector<BoxRow> boxes(bool includeEnded = false);
  std::optional<BoxRow> box(std::int64_t boxId);
  void setBoxState(std::int64_t boxId, const std::string& state);
  void markReady(std::int64_t boxId, const std::string& host);
  // Ends the life (deleted/removed) and books it once, through the ledger (core/ledger: the
  // life's work is closed and its derivation recorded); a life another process (or an
  // earlier call) already ended is left as it is.
  LifeEnd endBox(std::int64_t boxId, const std::string& finalState, double endEpoch);
  // Live cost of a box life at `nowEpoch` (ended lives stop at deleted_at): the ledger's
  // derivation; an unpriced box has its uptime and costs 0.
  MeterReading meter(const BoxRow& box, double nowEpoch) const;
  // Seconds since the box last did something (event rows: exec, transfer, run), or since ready.
  double idleSeconds(const BoxRow& box, double nowEpoch);

  // `source`: crosslab (seen by crosslab), entered (typed by a person), imported.
  void addMilestone(const std::string& venue, const std::string& milestone, const std::string& atIso,
                    const std::string& note = {}, std::int64_t boxId = 0, const std::string& source = "crosslab");
  // Several at once (an import): all recorded or none.
  void addMilestones(const std::string& venue, const std::vector<Milestone>& milestones);
  std::vector<Milestone> timeline(const std::string& venue);
  // Records `milestone` now unless the venue already has it at or after `sinceIso`
  // (once per box life: "ssh ready" on the first successful login). True when recorded.
  bool noteMilestoneOnce(const std::string& venue, const std::string& milestone, const std::string& sinceIso);
  // Once per box life: records `milestone` for the box's venue, tied to the
  // life, unless that life already has it. At `atIso` (ISO-8601 UTC) when given, else now.
  // True when recorded.
  bool noteLifeMilestone(const BoxRow& box, const std::string& milestone, const std::string& note = {},
                         const std::string& atIso = {});

  // Records activity on a box (resets the idle clock) without a run.
  void touchBox(std::int64_t boxId, const std::string& type, const std::string& message);

 private:
  void bookLife(const BoxRow& box, double endEpoch);
  void addMilestoneTx(const std::string& venue, const std::string& milestone, const std::string& atIso,
                      const std::string& note, std::int64_t boxId, const std::string& source);
  store::LabStore& lab_;
};

}  // namespace crosslab::venues
