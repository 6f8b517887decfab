#pragma once
// The friction log: what went wrong, what it cost, and whose fault it was — the lab's
// "complete bill". Entries change only through request… methods that fully succeed or
// change nothing. A failed or stalled run, a watchdog alert and a box life that ended with
// debug time each offer an entry pre-filled with the reason, the dead minutes and their
// cost at the box's price (suggest…), which the user confirms or edits.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crosslab::store {
class LabStore;
}

namespace crosslab::ledger {

enum class FrictionCategory { VenueHygiene, StackLag, OwnError, Hardware, Other };

// Stored keys: "venue_hygiene", "stack_lag", "own_error", "hardware", "other".
std::string_view toKey(FrictionCategory c);
// What the user reads: "venue hygiene", "stack/version lag", "own error", "hardware", "other".
std::string_view toLabel(FrictionCategory c);
// Accepts a key or a label.
std::optional<FrictionCategory> frictionCategoryFrom(std::string_view text);
const std::vector<FrictionCategory>& allFrictionCategories();

struct FrictionEntry {
  std::int64_t id = 0;
  std::string at;  // ISO-8601 UTC; now when empty on add
  std::string title;
  FrictionCategory category = FrictionCategory::Other;
  std::optional<double> minutes, usd;  // lost
  std::optional<std::int64_t> boxId, runId;
  std::string box, run;  // read side: the box's and run's names
  std::string cause;     // the reason (a run's failure reason, the watchdog's words)
  std::string fix;
  bool ecosystemSpecific = false;  // specific to the venue's ecosystem (ROCm, CUDA, MLX …)
  std::string origin;              // "run 12 failed", "watchdog run 12", "box 3 deleted with debug time"
};

// Fields to change; absent ones stay.
struct FrictionEdit {
  std::optional<std::string> title, cause, fix, at;
  std::optional<FrictionCategory> category;
  std::optional<std::optional<double>> minutes, usd;
  std::optional<std::optional<std::int64_t>> boxId, runId;
  std::optional<bool> ecosystemSpecific;
};

class FrictionLog {
 public:
  explicit FrictionLog(store::LabStore& lab);

  std::int64_t requestAdd(const FrictionEntry& entry);
  // Throws (and changes nothing) on an unknown id or an invalid field.
  void requestEdit(std::int64_t id, const FrictionEdit& edit);
  std::vector<FrictionEntry> list();
  std::optional<FrictionEntry> find(std::int64_t id);
  // How many entries were specific to a venue's ecosystem ("nothing ROCm-specific broke" = 0).
  std::int64_t ecosystemSpecificCount();

  // Pre-filled entries (not stored): from a failed or stalled run (its reason, its lost
  // minutes, their cost at its box's price), from a watchdog alert on a run, from a box
  // life that ended with debug time. nullopt when there is nothing to offer.
  std::optional<FrictionEntry> suggestFromRun(std::int64_t runId);
  std::optional<FrictionEntry> suggestFromWatchdog(std::int64_t runId, const std::string& alert);
  std::optional<FrictionEntry> suggestFromBoxLife(std::int64_t boxId);
  // Every offer not yet taken (no entry with the same origin): failed/stalled runs and
  // ended lives with debug time, newest first.
  std::vector<FrictionEntry> openSuggestions();

 private:
  store::LabStore& lab_;
};

}  // namespace crosslab::ledger
