#include "core/train/run_process.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace crosslab::train {
namespace {

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// Field 22 of /proc/PID/stat (start time in clock ticks since boot); -1 without /proc.
long long startTicksOf(long long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && (rest >> field); ++i)
    if (i == 22) return std::stoll(field);
  return -1;
}

// Seconds since the newest change to the run folder, its events log or its record.
std::optional<double> secondsSinceChange(const fs::path& runDir) {
  std::error_code ec;
  std::optional<fs::file_time_type> newest;
  for (const fs::path& p : {runDir, runDir / "events.jsonl", runDir / kProcessRecordName}) {
    const auto t = fs::last_write_time(p, ec);
    if (!ec && (!newest || t > *newest)) newest = t;
  }
  if (!newest) return std::nullopt;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - *newest).count();
}

}  // namespace

ProcessRecord currentProcessRecord() {
  ProcessRecord r;
  r.pid = static_cast<long long>(getpid());
  r.host = hostName();
  r.startTicks = startTicksOf(r.pid);
  return r;
}

void writeProcessRecord(const fs::path& runDir) { writeProcessRecord(runDir, currentProcessRecord()); }

void writeProcessRecord(const fs::path& runDir, const ProcessRecord& record) {
  const nlohmann::json j = {{"pid", record.pid}, {"host", record.host}, {"start_ticks", record.startTicks}};
  const fs::path tmp = runDir / (std::string(kProcessRecordName) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) throw std::runtime_error(tmp.string() + ": cannot write");
  }
  fs::rename(tmp, runDir / kProcessRecordName);
}

void removeProcessRecord(const fs::path& runDir) {
  std::error_code ec;
  fs::remove(runDir / kProcessRecordName, ec);
}

std::optional<ProcessRecord> readProcessRecord(const fs::path& runDir) {
  std::ifstream f(runDir / kProcessRecordName);
  if (!f) return std::nullopt;
  const auto j = nlohmann::json::parse(f, nullptr, false);
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer()) return std::nullopt;
  ProcessRecord r;
  r.pid = j["pid"].get<long long>();
  r.host = j.value("host", std::string());
  r.startTicks = j.contains("start_ticks") && j["start_ticks"].is_number_integer() ? j["start_ticks"].get<long long>() : -1;
  return r;
}

std::optional<bool> processAlive(const ProcessRecord& record) {
  if (record.pid <= 0) return false;
  if (record.host != hostName()) return std::nullopt;
  if (::kill(static_cast<pid_t>(record.pid), 0) != 0 && errno == ESRCH) return false;
  // Alive, or a reused pid: the kernel's start time tells them apart where /proc exists.
  const long long now = startTicksOf(record.pid);
  if (record.startTicks >= 0 && now >= 0 && now != record.startTicks) return false;
  return true;
}

std::string deadRunReason(const fs::path& runDir, double secondsSinceStart, double staleSeconds) {
  if (const auto record = readProcessRecord(runDir)) {
    const auto alive = processAlive(*record);
    if (alive && !*alive)
      return "the training process (pid " + std::to_string(record->pid) +
             ") is gone without an end event (killed, crashed, or the machine restarted)";
    if (alive) return {};
  }
  // No usable record: judge by the run folder's last change, after the row's own age.
  if (secondsSinceStart < staleSeconds) return {};
  const auto quiet = secondsSinceChange(runDir);
  if (quiet && *quiet < staleSeconds) return {};
  return "no trainer process on record and no change in " + runDir.string() + " for " +
         std::to_string(static_cast<long long>(quiet.value_or(secondsSinceStart))) + " s";
}

ProcessRecordGuard::ProcessRecordGuard(fs::path runDir) : runDir_(std::move(runDir)) { writeProcessRecord(runDir_); }
ProcessRecordGuard::~ProcessRecordGuard() { removeProcessRecord(runDir_); }

}  // namespace crosslab::train
