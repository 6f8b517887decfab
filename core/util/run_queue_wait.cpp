#include "core/util/run_queue_wait.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace crosslab::util {

RunQueueWait::RunQueueWait() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}

RunQueueWait::~RunQueueWait() {
  if (fd_ >= 0) ::close(fd_);
}

std::chrono::nanoseconds RunQueueWait::waited() const {
  if (fd_ < 0) return std::chrono::nanoseconds(0);
  char buf[96];
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return std::chrono::nanoseconds(0);
  buf[n] = '\0';
  // "run_ns wait_ns timeslices\n"
  char* end = nullptr;
  (void)std::strtoull(buf, &end, 10);
  if (end == buf) return std::chrono::nanoseconds(0);
  const char* second = end;
  const unsigned long long wait = std::strtoull(second, &end, 10);
  if (end == second) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<long long>(wait));
}

}  // namespace crosslab::util
