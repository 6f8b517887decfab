#pragma once
// When requests are issued, as vLLM's get_request does it: at an infinite rate every
// request is released at t = 0 (the concurrency semaphore then paces them); at a finite
// rate R the gaps are Gamma(shape = burstiness, scale = 1 / (R · burstiness)) seconds,
// so the mean gap is 1/R and burstiness 1 is a Poisson process. The first request is
// issued at t = 0.

#include <cstdint>
#include <optional>
#include <random>

namespace crosslab::bench {

class RequestSchedule {
 public:
  // rate: requests per second, nullopt = inf. Throws std::invalid_argument on rate ≤ 0
  // or burstiness ≤ 0.
  RequestSchedule(std::optional<double> rate, double burstiness, std::uint64_t seed);

  // Issue time of the next request, in seconds since the level started.
  double next();

 private:
  std::optional<double> rate_;
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gap_;
  double t_ = 0;
  bool first_ = true;
};

}  // namespace crosslab::bench
