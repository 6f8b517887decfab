// libFuzzer: a run's event lines (our events.jsonl, LLaMA-Factory's trainer_log.jsonl, tailed
// from a box) and its process output, through the line parser and the dead-run watchdog.
// Nothing may throw; a run judged failed says why; a dead run's cost is finite.
#include <cmath>
#include <sstream>

#include "core/train/run_monitor.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string text = fuzz::text(data, size);
  double now = 0;
  train::RunMonitor events({}, [&now] { return now; });
  train::RunMonitor output({}, [&now] { return now; });
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    now += 7;
    if (const auto p = train::parseEventLine(line)) (void)p->step;
    (void)train::parseTimedelta(line);
    events.feedEventLine(line);
    events.tick();
  }
  output.feedOutput(text);
  now += 4000;
  for (auto* m : {&events, &output}) {
    m->tick();
    m->processExited(size % 3 == 0 ? 0 : int(size % 256));
    if (m->status() == train::RunStatus::Failed || m->status() == train::RunStatus::Stalled)
      fuzz::require(!m->reason().empty(), "a failed run without a reason");
    const double cost = m->costWhileDead(2.99);
    fuzz::require(std::isfinite(cost) && cost >= 0, "cost while dead is not a finite, non-negative amount");
    fuzz::require(std::isfinite(m->stallThreshold()), "stall threshold not finite");
  }
  return 0;
}
