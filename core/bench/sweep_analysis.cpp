#include "core/bench/sweep_analysis.h"

#include <cstdio>

namespace crosslab::bench {

namespace {
// Significant digits ("%.3g") or fixed decimals ("%.1f"); `sign` forces a leading +/-.
std::string fmtG(double a, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, a);
  return buf;
}
std::string fmtF(double a, int decimals, bool sign = false) {
  char buf[64];
  if (sign)
    std::snprintf(buf, sizeof buf, "%+.*f", decimals, a);
  else
    std::snprintf(buf, sizeof buf, "%.*f", decimals, a);
  return buf;
}
// A rate: whole numbers from 100 on ("4764"), three significant digits below ("22.9", "0.7").
std::string fmtRate(double a) { return a >= 100 ? fmtF(a, 0) : fmtG(a, 3); }
}  // namespace

void CollapseBaseline::add(int concurrency, double perStreamTokS, double aggregateTokS) {
  if (perStreamTokS > 0) levels.push_back({concurrency, perStreamTokS, aggregateTokS});
}

std::string collapseReason(double perStreamTokS, int concurrency, const CollapseBaseline& before, double fraction,
                           const std::string& windowNote, double aggregateTokS) {
  if (before.empty()) return {};
  const auto& first = before.levels.front();
  const CollapseBaseline::Level* best = nullptr;  // decoded most together, among levels of no more streams
  for (const auto& l : before.levels)
    if (l.concurrency <= concurrency &&
        (!best || l.perStreamTokS * l.concurrency > best->perStreamTokS * best->concurrency))
      best = &l;
  auto together = [](int streams, double rate) {
    return std::to_string(streams) + (streams == 1 ? " stream decodes " : " streams together decode ") +
           fmtRate(rate * streams) + " tok/s";
  };
  const std::string head = "decode collapse: per-stream " + fmtRate(perStreamTokS) + " tok/s" +
                           (windowNote.empty() ? "" : " " + windowNote);
  const std::string at = " at concurrency " + std::to_string(concurrency);
  const double decode = perStreamTokS * concurrency;
  const auto deliversMoreThan = [&](const CollapseBaseline::Level& l) {  // both known
    return aggregateTokS > 0 && l.aggregateTokS > 0 && aggregateTokS > l.aggregateTokS;
  };
  if (perStreamTokS < fraction * first.perStreamTokS && decode <= first.perStreamTokS * first.concurrency &&
      !deliversMoreThan(first)) {
    const std::string base =
        first.concurrency == 1 ? "1-stream" : "concurrency " + std::to_string(first.concurrency) + "'s";
    return head + " < " + fmtF(fraction, 2) + " x " + base + " " + fmtRate(first.perStreamTokS) + " tok/s" + at +
           ", and " + together(concurrency, perStreamTokS) +
           ", no more than the " + fmtRate(first.perStreamTokS * first.concurrency) + " of concurrency " +
           std::to_string(first.concurrency) +
           (aggregateTokS > 0 && first.aggregateTokS > 0
                ? ", delivering " + fmtRate(aggregateTokS) + " tok/s, no more than its " + fmtRate(first.aggregateTokS)
                : std::string());
  }
  if (best && decode < kCollapseDrop * best->perStreamTokS * best->concurrency && !deliversMoreThan(*best))
    return head + at + ": " + together(concurrency, perStreamTokS) + " < " + fmtF(kCollapseDrop, 2) + " x the " +
           fmtRate(best->perStreamTokS * best->concurrency) + " of concurrency " + std::to_string(best->concurrency);
  return {};
}

std::optional<Knee> findKnee(const std::vector<LevelPoint>& levels, double minGrowth) {
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    const auto& a = levels[i];
    const auto& b = levels[i + 1];
    if (a.aggregateTokS <= 0) continue;
    const double growth = b.aggregateTokS / a.aggregateTokS - 1.0;
    if (growth < minGrowth) {
      return Knee{a.concurrency, "aggregate stops growing after concurrency " + std::to_string(a.concurrency) +
                                     ": " + fmtF(a.aggregateTokS, 1) + " -> " + fmtF(b.aggregateTokS, 1) +
                                     " tok/s at concurrency " + std::to_string(b.concurrency) + " (" +
                                     fmtF(growth * 100, 0, true) + "%)"};
    }
  }
  return std::nullopt;
}

}  // namespace crosslab::bench
