#include "core/infer/decode_path_chooser.h"

#include <algorithm>
#include <sstream>

namespace crosslab::infer {

const char* decodePathName(DecodePath p) { return p == DecodePath::Fused ? "fused" : "op-by-op"; }

DecodePath DecodePathChooser::pick(int rows) {
  Size& s = sizes_[rows];
  if (++s.used >= s.recheckAt) {  // measure both again; the next re-check comes twice as late
    s.tries = {};
    s.best = {};
    s.used = 0;
    s.recheckAt *= 2;
  }
  for (int p = 0; p < 2; ++p)
    if (s.tries[size_t(p)] < kTries) return DecodePath(p);
  return s.best[0] <= s.best[1] ? DecodePath::Fused : DecodePath::OpByOp;
}

void DecodePathChooser::record(int rows, DecodePath path, double seconds) {
  Size& s = sizes_[rows];
  const size_t p = size_t(path);
  if (s.tries[p] >= kTries) return;  // only the exploring steps count
  s.best[p] = s.tries[p] == 0 ? seconds : std::min(s.best[p], seconds);
  ++s.tries[p];
  ++revision_;
}

std::string DecodePathChooser::summary() const {
  std::ostringstream os;
  for (const auto& [rows, s] : sizes_) {
    if (s.tries[0] < kTries || s.tries[1] < kTries) continue;
    os << (os.tellp() > 0 ? " " : "") << rows << ":" << decodePathName(s.best[0] <= s.best[1] ? DecodePath::Fused : DecodePath::OpByOp);
  }
  return os.str();
}

}  // namespace crosslab::infer
