#include "core/infer/decode_path_chooser.h"

#include <algorithm>
#include <sstream>

namespace crosslab::infer {

const char* decodePathName(DecodePath p) {
  switch (p) {
    case DecodePath::Fused: return "fused";
    case DecodePath::OpByOp: return "op-by-op";
    case DecodePath::FusedSplit: return "fused-split";
  }
  return "?";
}

DecodePath DecodePathChooser::fastest(int rows, const Size& s) const {
  size_t best = 0;
  for (size_t p = 1; p < candidates(rows); ++p)
    if (s.best[p] < s.best[best]) best = p;
  return DecodePath(best);
}

double DecodePathChooser::bestOfOthers(int rows, const Size& s, size_t path) const {
  double best = 0;
  for (size_t o = 0; o < candidates(rows); ++o)
    if (o != path && s.best[o] > 0 && (best == 0 || s.best[o] < best)) best = s.best[o];
  return best;
}

void DecodePathChooser::stop(Size& s, size_t path, double ratio) {
  s.tries[path] = kTries;
  s.turnLeft = 0;
  if (++s.stops[path] >= 2) s.sitOutUntil[path] = s.steps + std::min(kMaxSitOut, uint64_t(kSitOut * ratio));
}

DecodePath DecodePathChooser::pick(int rows) {
  Size& s = sizes_[rows];
  ++s.steps;
  if (++s.used >= s.recheckAt) {  // measure again; the next re-check comes twice as late
    for (size_t p = 0; p < kPaths; ++p) {
      if (s.steps < s.sitOutUntil[p]) continue;  // sits this one out: its old figures stand
      s.tries[p] = 0;
      s.best[p] = 0;
    }
    s.turnLeft = 0;
    s.used = 0;
    s.recheckAt *= 2;
  }
  // Exploring: a turn of kTurn steps of one path runs to its end; then the path with the
  // fewest turns so far has the next (the paths alternate, so that a burst of load from other
  // threads slows every path's turns alike instead of all the tries of one). Op-by-op goes
  // last: where it is far slower, it is then stopped against the best fused figure there is.
  if (s.turnLeft > 0) return DecodePath(s.turnPath);
  constexpr size_t kOrder[] = {size_t(DecodePath::Fused), size_t(DecodePath::FusedSplit), size_t(DecodePath::OpByOp)};
  size_t next = kPaths;
  for (size_t p : kOrder)
    if (p < candidates(rows) && (next == kPaths || s.tries[p] < s.tries[next])) next = p;
  if (s.tries[next] < kTries) return DecodePath(next);
  return fastest(rows, s);
}

void DecodePathChooser::record(int rows, DecodePath path, double seconds) {
  Size& s = sizes_[rows];
  const size_t p = size_t(path);
  if (p >= candidates(rows) || s.tries[p] >= kTries) return;  // only the exploring steps count
  if (s.turnLeft == 0 || s.turnPath != int(p)) {  // a turn begins
    s.turnPath = int(p);
    s.turnLeft = kTurn;
  }
  const int index = kTurn - s.turnLeft--;
  const double others = bestOfOthers(rows, s, p);
  if (index < kWarmup) {  // untimed, unless hopeless before any timed figure of this measurement
    // (not the split step's first: it may wait for its worker's vCPU to wake, milliseconds on
    // a VM when that vCPU has idled through the steps before, and that says nothing of the
    // path's own speed)
    const bool coldStart = path == DecodePath::FusedSplit && index == 0;
    if (!coldStart && s.best[p] == 0 && others > 0 && seconds > kHopeless * others) {
      s.best[p] = seconds;  // for the summary: measured, and far slower
      ++revision_;
      return stop(s, p, seconds / others);
    }
  } else {  // timed
    s.best[p] = s.best[p] == 0 ? seconds : std::min(s.best[p], seconds);
    ++revision_;
    if (others > 0 && s.best[p] > 2 * others) return stop(s, p, s.best[p] / others);
  }
  if (s.turnLeft == 0 && ++s.tries[p] >= kTries) s.stops[p] = 0;  // all its turns: not far slower
}

std::string DecodePathChooser::summary() const {
  std::ostringstream os;
  for (const auto& [rows, s] : sizes_) {
    bool measured = true;
    for (size_t p = 0; p < candidates(rows); ++p) measured = measured && s.tries[p] >= kTries;
    if (!measured) continue;
    os << (os.tellp() > 0 ? " " : "") << rows << ":" << decodePathName(fastest(rows, s));
  }
  return os.str();
}

}  // namespace crosslab::infer
