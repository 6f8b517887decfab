#include "core/bench/request_schedule.h"

#include <stdexcept>

namespace crosslab::bench {

RequestSchedule::RequestSchedule(std::optional<double> rate, double burstiness, std::uint64_t seed)
    : rate_(rate), rng_(seed) {
  if (rate_ && !(*rate_ > 0)) throw std::invalid_argument("request rate must be > 0 or inf");
  if (!(burstiness > 0)) throw std::invalid_argument("burstiness must be > 0");
  if (rate_) gap_ = std::gamma_distribution<double>(burstiness, 1.0 / (*rate_ * burstiness));
}

double RequestSchedule::next() {
  if (first_ || !rate_) {
    first_ = false;
    return t_;
  }
  t_ += gap_(rng_);
  return t_;
}

}  // namespace crosslab::bench
