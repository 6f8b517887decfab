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

DecodePath DecodePathChooser::pick(int rows) {
  Size& s = sizes_[rows];
  if (++s.used >= s.recheckAt) {  // measure all again; the next re-check comes twice as late
    s.tries = {};
    s.best = {};
    s.turnLeft = 0;
    s.used = 0;
    s.recheckAt *= 2;
  }
  // Exploring: a turn of kTurn steps of one path runs to its end; then the path with the
  // fewest turns so far has the next (the paths alternate, so that a burst of load from other
  // threads slows every path's turns alike instead of all the tries of one).
  if (s.turnLeft > 0) return DecodePath(s.turnPath);
  size_t next = 0;
  for (size_t p = 1; p < candidates(rows); ++p)
    if (s.tries[p] < s.tries[next]) next = p;
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
  if (index >= kWarmup) {  // timed
    s.best[p] = s.best[p] == 0 ? seconds : std::min(s.best[p], seconds);
    ++revision_;
    for (size_t o = 0; o < candidates(rows); ++o)
      if (o != p && s.best[o] > 0 && s.best[p] > 2 * s.best[o]) {  // far slower: no more steps of it
        s.tries[p] = kTries;
        s.turnLeft = 0;
        return;
      }
  }
  if (s.turnLeft == 0) ++s.tries[p];
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
