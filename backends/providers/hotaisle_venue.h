#pragma once
// What the lab records about Hot Aisle, shared by `crosslab-cli venues …` and the Venues
// panel: the API key from the variable a box or form names (or the keyring); client
// options that reach a recorded box's VM through the URL, team and key it was rented
// with; an offers fetch as a probe on the availability ladder; and renting exactly once,
// with the team's VMs listed after a failure whose outcome is unknown.

#include <QString>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/providers/hotaisle_client.h"
#include "core/venues/venue_store.h"

namespace crosslab::providers {

constexpr const char* kHotAisle = "hotaisle";  // provider id and ladder venue name
constexpr const char* kHotAisleKeyVar = "HOTAISLE_API_KEY";
constexpr const char* kHotAisleKeyring = "hotaisle-api-key";

// The key from the environment variable `envVar` (empty: HOTAISLE_API_KEY), else the OS
// keyring entry hotaisle-api-key. Throws ProviderError(BadRequest) naming that variable
// when neither has one. Call it off the GUI thread (the keyring may take seconds).
QString hotAisleKey(const QString& envVar);

// Options that reach the VM of `box` as it was rented: its API URL (empty: the default),
// team and key variable; bounds and cancel from `base`. The key is read here.
HotAisleOptions optionsForBox(const venues::BoxRow& box, HotAisleOptions base = {});

// Records an offers fetch on the ladder: a probe of the "hotaisle" venue (what was
// offered, the cheapest VM, when) that also updates its rung.
void recordOffersProbe(venues::VenueStore& store, const std::vector<Offer>& offers);

// A new box life for a VM rented through `options` (state "provisioning").
venues::BoxRow boxForVm(venues::VenueStore& store, const Vm& vm, const Offer& offer, const HotAisleOptions& options,
                        const QString& keyVar);

struct ProvisionOutcome {
  std::optional<Vm> vm;       // the VM the provider named: it bills from now
  std::string error;          // why there is none
  bool ambiguous = false;     // the request may have rented a VM anyway
  bool listed = false;        // the team's VMs were listed after an ambiguous failure
  std::string listError;      // why they could not be
  std::vector<Vm> appeared;   // not there just before the request, unknown to the lab: probably ours
  std::vector<Vm> unknown;    // other VMs of the team the lab does not know about
};

// Rents `offer` with one POST. `knownVms`: provider VM names the lab already tracks.
// Throws ProviderError when nothing was rented for sure (refused, 4xx, cancelled before
// sending); returns an outcome without vm when the outcome is unknown, after listing the
// team's VMs (a fresh bound, not cancelled by the request's cancel flag).
ProvisionOutcome provisionOnce(const HotAisleOptions& options, const Offer& offer,
                               const std::set<std::string>& knownVms);
// One paragraph for the user: what failed, that it was not repeated, what the team holds.
std::string describeOutcome(const ProvisionOutcome& outcome);

}  // namespace crosslab::providers
