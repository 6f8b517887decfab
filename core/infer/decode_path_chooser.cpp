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
    s.used = 0;
    s.recheckAt *= 2;
  }
  // Exploring: the paths take turns (the one with the fewest tries), so that a burst of load
  // from other threads (the HTTP threads of a serving run) slows steps of every path alike
  // instead of all the tries of one.
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
  s.best[p] = s.tries[p] == 0 ? seconds : std::min(s.best[p], seconds);
  ++s.tries[p];
  ++revision_;
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
