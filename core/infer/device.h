#pragma once
// The libtorch device a --device string names, checked against what this build of
// libtorch and this machine have: "--device cuda" on a CPU-only build is one line naming
// the devices there are, not a libtorch stack trace.

#include <c10/core/Device.h>

#include <string>
#include <vector>

namespace crosslab::infer {

// "cpu", then "cuda:0" … (ROCm builds say cuda too) and "mps" where present.
std::vector<std::string> availableDevices();
// Throws std::runtime_error with one line when `spec` is not a device string or names a
// device this build or machine does not have.
c10::Device parseDevice(const std::string& spec);

}  // namespace crosslab::infer
