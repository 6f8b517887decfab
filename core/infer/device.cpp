#include "core/infer/device.h"

#include <ATen/Context.h>

#include <optional>
#include <stdexcept>

namespace crosslab::infer {
namespace {

std::string listed() {
  std::string s;
  for (const auto& d : availableDevices()) s += (s.empty() ? "" : ", ") + d;
  return s;
}

}  // namespace

std::vector<std::string> availableDevices() {
  std::vector<std::string> out{"cpu"};
  if (at::hasCUDA() || at::hasHIP())
    for (size_t i = 0; i < at::getNumGPUs(); ++i) out.push_back("cuda:" + std::to_string(i));
  if (at::hasMPS()) out.push_back("mps");
  return out;
}

c10::Device parseDevice(const std::string& spec) {
  std::optional<c10::Device> device;
  try {
    device.emplace(spec);
  } catch (const std::exception&) {
    throw std::runtime_error("unknown device '" + spec + "' (devices here: " + listed() + ")");
  }
  if (device->is_cpu()) return *device;
  if (device->is_cuda()) {
    const bool built = at::detail::getCUDAHooks().hasCUDART() || at::hasHIP();
    if (!built)
      throw std::runtime_error("device '" + spec + "': this build's libtorch has no CUDA or ROCm support (devices here: " +
                               listed() + ")");
    const size_t n = at::getNumGPUs();
    if (n == 0) throw std::runtime_error("device '" + spec + "': no GPU is visible (devices here: " + listed() + ")");
    if (device->has_index() && size_t(device->index()) >= n)
      throw std::runtime_error("device '" + spec + "': there are " + std::to_string(n) + " GPUs (devices here: " +
                               listed() + ")");
    return *device;
  }
  if (device->is_mps() && at::hasMPS()) return *device;
  throw std::runtime_error("device '" + spec + "' is not available in this build (devices here: " + listed() + ")");
}

}  // namespace crosslab::infer
