#include "core/util/openmp_waits.h"

#include <cstdlib>

#include <unistd.h>

namespace crosslab::util {

void reexecWithPassiveOpenMpWaits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: run on with libgomp's default
}

}  // namespace crosslab::util
