#pragma once
// The process record of a local training run: `RUN_DIR/process.json` = {"pid", "host",
// "start_ticks"}, written by `crosslab-cli train` when it starts and removed when it ends
// (normally, by exception or by SIGTERM). A record left behind means the trainer died
// without cleaning up (SIGKILL, crash, power loss). A store row still marked running is
// judged dead when its record names a process of this host that is gone (or whose pid
// was reused: the kernel start time differs), or — without a record, or with a record
// from another host — when nothing in the run folder changed for a long time.

#include <filesystem>
#include <optional>
#include <string>

namespace crosslab::train {

struct ProcessRecord {
  long long pid = 0;
  std::string host;
  long long startTicks = -1;  // /proc/PID/stat field 22; -1 where unknown
};

inline constexpr const char* kProcessRecordName = "process.json";

// This process, now.
ProcessRecord currentProcessRecord();
// Writes RUN_DIR/process.json atomically for this process.
void writeProcessRecord(const std::filesystem::path& runDir);
void writeProcessRecord(const std::filesystem::path& runDir, const ProcessRecord& record);
void removeProcessRecord(const std::filesystem::path& runDir);
std::optional<ProcessRecord> readProcessRecord(const std::filesystem::path& runDir);

// Whether the process a record names is alive on this host (the same process: same pid
// and start time). nullopt when it cannot tell (another host).
std::optional<bool> processAlive(const ProcessRecord& record);

// Why a local run that the store still calls running/pending is dead, or empty when it
// may be alive. `secondsSinceStart` is the age of the store row; `staleSeconds` how long
// a run folder may stay unchanged before a run without a usable record counts as dead.
std::string deadRunReason(const std::filesystem::path& runDir, double secondsSinceStart, double staleSeconds);

// Removes the record when it goes out of scope (any exit but SIGKILL / crash).
class ProcessRecordGuard {
 public:
  explicit ProcessRecordGuard(std::filesystem::path runDir);
  ~ProcessRecordGuard();
  ProcessRecordGuard(const ProcessRecordGuard&) = delete;
  ProcessRecordGuard& operator=(const ProcessRecordGuard&) = delete;

 private:
  std::filesystem::path runDir_;
};

}  // namespace crosslab::train
