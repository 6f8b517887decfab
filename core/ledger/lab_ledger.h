#pragma once
// The lab's ledger as one value: every box life with its derivation, other spend (judge
// and embedding APIs, by hand or booked by the judge gate) and credits, and the totals.
// Read from the store; written only through LifeRecorder and the request… methods here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger/box_life.h"
#include "core/ledger/derivation.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::ledger {

// Spend outside any box life (the ledger table's api/other rows).
struct OtherSpend {
  std::int64_t id = 0;
  std::string at;        // ISO-8601 UTC
  std::string category;  // "api" | "other"
  double usd = 0;
  std::string note;
};

struct Credit {
  std::int64_t id = 0;
  std::string at;
  double usd = 0;
  std::string note;
};

struct LifeRow {
  BoxLife life;
  LifeLedger ledger;
};

struct LedgerTotals {
  Split minutes, usd;
  std::optional<double> ratio;
  double otherUsd = 0, creditUsd = 0;
};

struct LabLedger {
  std::vector<LifeRow> lives;  // in order of provisioning
  std::vector<OtherSpend> other;
  std::vector<Credit> credits;
  LedgerTotals totals;
};

// Every life of the lab (boxes with a price and a provisioning time), oldest first.
std::vector<BoxLife> readLives(store::LabStore& lab);
std::optional<BoxLife> readLife(store::LabStore& lab, std::int64_t boxId);
LabLedger readLedger(store::LabStore& lab, double now);
LedgerTotals sumLives(const std::vector<LifeRow>& lives);

// The staging a new life of `venue` will likely repeat: the venue's last ended life's
// transfers at their measured rates, priced at `pricePerHour`. None without such a life.
std::optional<StagingForecast> stagingForecastFor(store::LabStore& lab, const std::string& venue,
                                                  double pricePerHour);

// Other spend and credits; each all-or-nothing. `category` is "api" or "other".
std::int64_t requestAddOtherSpend(store::LabStore& lab, const std::string& category, double usd,
                                  const std::string& note, const std::string& atIso = {});
std::int64_t requestAddCredit(store::LabStore& lab, double usd, const std::string& note,
                              const std::string& atIso = {});

}  // namespace crosslab::ledger
