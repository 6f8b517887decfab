#pragma once
// Agreement between two instruments over the same samples: raw agreement and Cohen's
// kappa, kappa = (po - pe) / (1 - pe), pe = sum over labels of pA(label) * pB(label).

#include <optional>
#include <string>
#include <vector>

namespace crosslab::eval {

struct AgreementResult {
  size_t n = 0;                  // paired samples
  size_t agree = 0;
  double raw = 0;                // agree / n
  std::optional<double> kappa;   // none when n == 0 or pe == 1 (both raters constant, same label)
};

class Agreement {
 public:
  // a[i] and b[i] are the two instruments' labels for sample i (sizes must match).
  static AgreementResult compute(const std::vector<std::string>& a, const std::vector<std::string>& b);
};

}  // namespace crosslab::eval
