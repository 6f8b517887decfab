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
}  // namespace

std::string collapseReason(double perStreamTokS, double baselineTokS, double fraction, int concurrency,
                           const std::string& windowNote) {
  if (!(baselineTokS > 0) || perStreamTokS >= fraction * baselineTokS) return {};
  return "decode collapse: per-stream " + fmtG(perStreamTokS, 3) + " tok/s" +
         (windowNote.empty() ? "" : " " + windowNote) + " < " + fmtF(fraction, 2) + " x 1-stream " +
         fmtG(baselineTokS, 3) + " tok/s at concurrency " + std::to_string(concurrency);
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
