#pragma once
// Judgements over a sweep of concurrency levels: decode collapse (the streams' decode rate
// falling, not just shared out) and the saturation knee (where aggregate output
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

// What the levels before the one judged decoded: each measured level's per-stream rate and,
// when known, the output tok/s it delivered.
struct CollapseBaseline {
  struct Level {
    int concurrency = 0;
    double perStreamTokS = 0;
    double aggregateTokS = 0;  // output tok/s the level delivered, its output_throughput (0: not known)
  };
  std::vector<Level> levels;  // in the order measured; the first is the base of the first test
  // Ignored unless the per-stream rate was measured (> 0).
  void add(int concurrency, double perStreamTokS, double aggregateTokS = 0);
  bool empty() const { return levels.empty(); }
};

// A level whose `concurrency` streams decode perStreamTokS each has collapsed when either
//  - each stream crawls and the batch bought nothing: per stream under `fraction` × the first
//    measured level's, and the streams together (per stream × concurrency) decoding no faster
//    than that level's did, nor delivering more output tok/s (`aggregateTokS`, when both are
//    known: a per-stream rate read from chunks that the client received in bursts overstates
//    the streams' pace, the demo's 16-token one-stream level at 38.5k tok/s a stream while it
//    delivered 5.1k, and sixteen streams delivering 17.2k looked like a collapse against it); or
//  - the batch's decode rate fell: together under kCollapseDrop × the most that an earlier level
//    of no more streams decoded together, nor delivering more output tok/s than that level did
//    (when both are known, as above: a quick demo lab built beside other tests put one stream at
//    26.8k tok/s from bursts while it delivered 4.7k, and four streams delivering 5.8k, 4.0k
//    decoded together, stopped the sweep as a collapse).
// A rate that falls per stream while the level as a whole decodes faster is saturation (the
// knee), not a collapse. The seed's Spark row (3.2 tok/s at one stream, 12.1 together at c=4,
// 0.7 per stream at c=8) is a collapse by the second test; the demo model on two cores (17.8k at
// one stream, 1.07k per stream but 34k together at c=32) is none.
// Returns "decode collapse: per-stream …" naming the test that failed, or empty when healthy.
// `windowNote` names the window ("over the last 5 s") if any; `aggregateTokS` is what the level
// delivers (0: not known): a finished level's output_throughput, or live, the tokens all its
// streams sent per second over the window.
inline constexpr double kCollapseDrop = 0.5;
std::string collapseReason(double perStreamTokS, int concurrency, const CollapseBaseline& before, double fraction,
                           const std::string& windowNote = {}, double aggregateTokS = 0);

struct Knee {
  int concurrency = 0;  // the last level worth its streams
  std::string description;
};

// The first level after which aggregate throughput grows by less than `minGrowth`
// (0.10 = 10 %) per step; nullopt while it keeps growing (or with fewer than 2 levels).
std::optional<Knee> findKnee(const std::vector<LevelPoint>& levels, double minGrowth = 0.10);

}  // namespace crosslab::bench
