#pragma once
// The meter: what a box life costs. Billing is the ledger's (core/ledger/derivation.h):
// per started minute, at least the minimum reservation; the timeline summary derives elapsed and active human time from the
// availability-ladder milestones. Pure functions over ISO-8601 UTC times.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace crosslab::venues {

// "2026-11-29T16:40:00Z" (or "…:00.250Z") -> seconds since the epoch; nullopt when it does not parse.
std::optional<double> parseUtc(const std::string& iso);
std::string formatUtc(double epochSeconds);

struct MeterReading {
  double elapsedHours = 0;  // wall time of the life so far
  double billedHours = 0;   // at least the minimum reservation
  double usd = 0;
};

// Cost of a life from `startIso` to `endEpoch` at `pricePerHour` with `minMinutes` billed at least.
MeterReading meterReading(double pricePerHour, int minMinutes, double startEpoch, double endEpoch);

// Names crosslab records itself (a person may enter any other name).
namespace milestone {
constexpr const char* kAccountCreated = "account created";
constexpr const char* kKeyMinted = "key minted";
constexpr const char* kProvisionRequest = "provision request";
constexpr const char* kProvisioned = "provisioned";  // the provider named the VM
constexpr const char* kRunning = "running";          // the provider says it runs
constexpr const char* kSshReady = "ssh ready";       // first successful login of the life
constexpr const char* kFirstToken = "first token";   // first inference token of the life
constexpr const char* kDeleted = "deleted";          // the life ended
}  // namespace milestone

struct Milestone {
  Milestone(std::string name_ = {}, double at_ = 0, std::string source_ = "crosslab", std::int64_t boxId_ = 0,
            std::string note_ = {})
      : name(std::move(name_)), at(at_), source(std::move(source_)), boxId(boxId_), note(std::move(note_)) {}
  std::string name;    // "account created", "key minted", "provision request", "ssh ready", "first token"
  double at = 0;       // epoch seconds
  std::string source;  // crosslab (seen), entered (by a person), imported (from a file)
  std::int64_t boxId;  // the box life it belongs to, 0 for the venue's own
  std::string note;
};

struct TimelineSummary {
  // Account to silicon: first milestone to the first "first token" (or to the last
  // milestone before a life ended when no token was recorded). Ends of lives are not
  // part of the way to silicon.
  double elapsedSeconds = 0;
  // Sum of the gaps between consecutive milestones of that span that are shorter than
  // `idleGap` (a 22-hour gap between account and key is the calendar, not work).
  double activeSeconds = 0;
  int milestones = 0;  // how many the span holds
};

TimelineSummary summarizeTimeline(std::vector<Milestone> milestones, double idleGapSeconds = 1800);

}  // namespace crosslab::venues
