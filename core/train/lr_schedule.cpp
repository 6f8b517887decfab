#include "core/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace crosslab::train {

double lrMultiplier(const std::string& type, std::int64_t step, std::int64_t warmup, std::int64_t total) {
  if (type != "linear" && type != "cosine" && type != "constant")
    throw std::invalid_argument("unknown lr_scheduler_type '" + type + "' (linear, cosine, constant)");
  if (step < warmup) return double(step) / double(std::max<std::int64_t>(1, warmup));
  if (type == "constant") return 1.0;
  if (type == "linear")
    return std::max(0.0, double(total - step) / double(std::max<std::int64_t>(1, total - warmup)));
  // cosine with num_cycles 0.5
  const double progress = double(step - warmup) / double(std::max<std::int64_t>(1, total - warmup));
  return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * 2.0 * 0.5 * progress)));
}

}  // namespace crosslab::train
