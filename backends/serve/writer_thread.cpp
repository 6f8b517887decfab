#include "backends/serve/writer_thread.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace crosslab::serve::writer_thread {

void setUp(bool low) {
  pthread_setname_np(pthread_self(), "sse-writer");
  sched_param none{};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
  // PRIO_PROCESS with a thread id sets that thread's nice value alone (Linux); raising it is
  // always allowed.
  if (low) (void)setpriority(PRIO_PROCESS, id_t(gettid()), kLowNice);
}

bool NeighbourLoad::readProc(Sample* s) {
  s->at = std::chrono::steady_clock::now();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") return false;
  s->machine = user + nice + system + irq + softirq;  // guest time is inside user already
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
  s->self = utime + stime;
  return true;
}

NeighbourLoad::NeighbourLoad(Source source, long ticksPerSecond)
    : source_(std::move(source)), ticksPerSecond_(double(ticksPerSecond > 0 ? ticksPerSecond : sysconf(_SC_CLK_TCK))) {
  Sample s;
  if (source_(&s)) from_ = s;
}

double NeighbourLoad::coresSinceLast() {
  Sample now;
  if (!source_(&now)) return -1;
  if (!from_) {  // the first read failed: count from here
    from_ = now;
    return -1;
  }
  const double seconds = std::chrono::duration<double>(now.at - from_->at - skipped_).count();
  if (seconds < 0.2) return -1;
  const double ticks = double((now.machine - from_->machine) - (now.self - from_->self) - skippedTicks_);
  from_ = now;
  skippedTicks_ = 0;
  skipped_ = {};
  return std::max(0.0, ticks) / ticksPerSecond_ / seconds;
}

void NeighbourLoad::pause() {
  Sample s;
  if (!paused_ && source_(&s)) paused_ = s;
}

void NeighbourLoad::resume() {
  Sample s;
  if (paused_ && from_ && source_(&s) && paused_->at >= from_->at) {
    skippedTicks_ += (s.machine - paused_->machine) - (s.self - paused_->self);
    skipped_ += s.at - paused_->at;
  }
  paused_.reset();
}

}  // namespace crosslab::serve::writer_thread
