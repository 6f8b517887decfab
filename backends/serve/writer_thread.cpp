#include "backends/serve/writer_thread.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace crosslab::serve::writer_thread {

void setUp(bool low) {
  pthread_setname_np(pthread_self(), "sse-writer");
  sched_param none{};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
  // PRIO_PROCESS with a thread id sets that thread's nice value alone (Linux); raising it is
  // always allowed.
  if (low) (void)setpriority(PRIO_PROCESS, id_t(gettid()), kLowNice);
}

bool NeighbourLoad::sample(long long* machine, long long* self, std::chrono::steady_clock::time_point* at) {
  *at = std::chrono::steady_clock::now();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") return false;
  *machine = user + nice + system + irq + softirq;  // guest time is inside user already
  std::ifstream own("/proc/self/stat");
  std::string line;
  if (!std::getline(own, line)) return false;
  const auto close = line.rfind(')');  // the name may hold spaces and parentheses
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  long long utime = -1, stime = -1;
  for (int i = 3; fields >> field; ++i) {  // fields 14 and 15 (man 5 proc), in clock ticks too
    if (i == 14) utime = std::strtoll(field.c_str(), nullptr, 10);  // no throw: on the writer thread
    if (i == 15) {
      stime = std::strtoll(field.c_str(), nullptr, 10);
      break;
    }
  }
  if (utime < 0 || stime < 0) return false;
  *self = utime + stime;
  return true;
}

double NeighbourLoad::coresSinceLast() {
  long long machine = 0, self = 0;
  std::chrono::steady_clock::time_point at;
  if (!sample(&machine, &self, &at) || machine_ < 0) {
    sample(&machine_, &self_, &at_);
    return -1;
  }
  const double seconds = std::chrono::duration<double>(at - at_).count();
  if (seconds < 0.2) return -1;
  const double ticks = double((machine - machine_) - (self - self_));
  machine_ = machine;
  self_ = self;
  at_ = at;
  return ticks / double(sysconf(_SC_CLK_TCK)) / seconds;
}

}  // namespace crosslab::serve::writer_thread
