#pragma once
// Judgements over a sweep of concurrency levels: decode collapse (per-stream decode rate
// far below the 1-stream rate) and the saturation knee (where aggregate output
// throughput stops growing).

#include <optional>
#include <string>
#include <vector>

namespace crosslab::bench {

struct LevelPoint {
  int concurrency = 0;
  double aggregateTokS = 0;  // output_throughput
  double perStreamTokS = 0;
};

// "per-stream 0.7 tok/s < 0.10 × 1-stream 3.2 tok/s at concurrency 8", or empty when
// the rate is healthy. `windowNote` names the window ("over the last 5 s") if any.
std::string collapseReason(double perStreamTokS, double baselineTokS, double fraction, int concurrency,
                           const std::string& windowNote = {});

struct Knee {
  int concurrency = 0;  // the last level worth its streams
  std::string description;
};

// The first level after which aggregate throughput grows by less than `minGrowth`
// (0.10 = 10 %) per step; nullopt while it keeps growing (or with fewer than 2 levels).
std::optional<Knee> findKnee(const std::vector<LevelPoint>& levels, double minGrowth = 0.10);

}  // namespace crosslab::bench
