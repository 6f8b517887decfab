#pragma once
// The meter: what a box life costs. Billing is hourly price × max(elapsed, minimum
// reservation); the timeline summary derives elapsed and active human time from the
// availability-ladder milestones. Pure functions over ISO-8601 UTC times.

#include <optional>
#include <string>
#include <vector>

namespace crosslab::venues {

// "2026-11-29T16:40:00Z" -> seconds since the epoch; nullopt when it does not parse.
std::optional<double> parseUtc(const std::string& iso);
std::string formatUtc(double epochSeconds);

struct MeterReading {
  double elapsedHours = 0;  // wall time of the life so far
  double billedHours = 0;   // at least the minimum reservation
  double usd = 0;
};

// Cost of a life from `startIso` to `endEpoch` at `pricePerHour` with `minMinutes` billed at least.
MeterReading meterReading(double pricePerHour, int minMinutes, double startEpoch, double endEpoch);

struct Milestone {
  std::string name;  // "account created", "key minted", "provision request", "ssh ready", "first token"
  double at = 0;     // epoch seconds
};

struct TimelineSummary {
  double elapsedSeconds = 0;  // first to last milestone
  // Sum of the gaps between consecutive milestones that are shorter than `idleGap`
  // (a 22-hour gap between account and key is the calendar, not work).
  double activeSeconds = 0;
};

TimelineSummary summarizeTimeline(std::vector<Milestone> milestones, double idleGapSeconds = 1800);

}  // namespace crosslab::venues
