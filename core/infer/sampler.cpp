#include "core/infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace crosslab::infer {

int32_t argmax(const float* logits, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  if (params.temperature < 0) throw std::invalid_argument("temperature must be >= 0");
  if (params.topP <= 0 || params.topP > 1) throw std::invalid_argument("top-p must be in (0, 1]");
  if (params.topK < 0) throw std::invalid_argument("top-k must be >= 0");
}

int32_t Sampler::sample(const float* logits, size_t n) {
  if (params_.temperature == 0.0 || params_.topK == 1) return argmax(logits, n);
  scratch_.resize(n);
  for (size_t i = 0; i < n; ++i) scratch_[i] = {logits[i], static_cast<int32_t>(i)};
  const auto byScore = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = n;
  if (params_.topK > 0 && size_t(params_.topK) < n) {
    keep = size_t(params_.topK);
    std::partial_sort(scratch_.begin(), scratch_.begin() + std::ptrdiff_t(keep), scratch_.end(), byScore);
  } else {
    std::sort(scratch_.begin(), scratch_.end(), byScore);
  }
  // Softmax over the kept scores at the temperature (double for a stable sum).
  std::vector<double> p(keep);
  const double maxScore = scratch_[0].first;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp((scratch_[i].first - maxScore) / params_.temperature);
  // Top-p: the smallest prefix whose mass reaches p (at least one token).
  if (params_.topP < 1.0) {
    double cum = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += p[i] / sum;
      if (cum >= params_.topP) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += p[i];
  }
  std::uniform_real_distribution<double> uniform(0.0, sum);
  double r = uniform(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r <= 0) return scratch_[i].second;
  }
  return scratch_[keep - 1].second;
}

}  // namespace crosslab::infer
