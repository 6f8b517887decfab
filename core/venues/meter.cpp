#include "core/venues/meter.h"

#include "core/ledger/derivation.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace crosslab::venues {

std::optional<double> parseUtc(const std::string& iso) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  std::string rest = iso.substr(static_cast<size_t>(consumed));
  double fraction = 0;  // "…:40.250Z": the ledger records sub-second times
  if (!rest.empty() && rest[0] == '.') {
    size_t digits = 1;
    double scale = 0.1;
    for (; digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9'; ++digits, scale /= 10)
      fraction += (rest[digits] - '0') * scale;
    if (digits == 1) return std::nullopt;
    rest = rest.substr(digits);
  }
  if (!(rest.empty() || rest == "Z" || rest == "+00:00")) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + fraction;
}

std::string formatUtc(double epochSeconds) {
  const std::time_t t = static_cast<std::time_t>(epochSeconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

MeterReading meterReading(double pricePerHour, int minMinutes, double startEpoch, double endEpoch) {
  ledger::BoxLife life;  // the ledger's billing rule: per minute, over the minimum
  life.pricePerHour = pricePerHour;
  life.minMinutes = minMinutes;
  life.provisioned = startEpoch;
  life.deleted = std::max(startEpoch, endEpoch);
  const auto l = ledger::derive(life, endEpoch);
  return {l.minutes.used / 60.0, l.minutes.billed / 60.0, l.usd.billed};
}

TimelineSummary summarizeTimeline(std::vector<Milestone> milestones, double idleGapSeconds) {
  TimelineSummary s;
  milestones.erase(std::remove_if(milestones.begin(), milestones.end(),
                                  [](const Milestone& m) { return m.name == milestone::kDeleted; }),
                   milestones.end());
  std::stable_sort(milestones.begin(), milestones.end(),
                   [](const Milestone& a, const Milestone& b) { return a.at < b.at; });
  auto token = std::find_if(milestones.begin(), milestones.end(),
                            [](const Milestone& m) { return m.name == milestone::kFirstToken; });
  if (token != milestones.end()) milestones.erase(token + 1, milestones.end());
  s.milestones = static_cast<int>(milestones.size());
  if (milestones.size() < 2) return s;
  s.elapsedSeconds = milestones.back().at - milestones.front().at;
  for (size_t i = 1; i < milestones.size(); ++i) {
    const double gap = milestones[i].at - milestones[i - 1].at;
    if (gap < idleGapSeconds) s.activeSeconds += gap;
  }
  return s;
}

}  // namespace crosslab::venues
