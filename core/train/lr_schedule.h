#pragma once
// Learning-rate multipliers with warmup, as transformers' get_*_schedule_with_warmup
// compute them (LambdaLR): `step` is the number of optimizer steps already taken.

#include <cstdint>
#include <string>

namespace crosslab::train {

// "linear" | "cosine" | "constant" (constant keeps the warmup ramp, as
// constant_with_warmup). Throws std::invalid_argument for another name.
double lrMultiplier(const std::string& type, std::int64_t step, std::int64_t warmupSteps, std::int64_t totalSteps);

}  // namespace crosslab::train
