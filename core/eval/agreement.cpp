#include "core/eval/agreement.h"

#include <map>
#include <stdexcept>

namespace crosslab::eval {

AgreementResult Agreement::compute(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("agreement: label lists differ in length");
  AgreementResult r;
  r.n = a.size();
  if (r.n == 0) return r;
  std::map<std::string, std::pair<size_t, size_t>> marginals;  // label -> (count in a, count in b)
  for (size_t i = 0; i < r.n; ++i) {
    r.agree += a[i] == b[i];
    ++marginals[a[i]].first;
    ++marginals[b[i]].second;
  }
  const double n = static_cast<double>(r.n);
  r.raw = static_cast<double>(r.agree) / n;
  double pe = 0;
  for (const auto& [label, counts] : marginals)
    pe += (static_cast<double>(counts.first) / n) * (static_cast<double>(counts.second) / n);
  if (pe < 1.0 - 1e-12) r.kappa = (r.raw - pe) / (1.0 - pe);
  return r;
}

}  // namespace crosslab::eval
