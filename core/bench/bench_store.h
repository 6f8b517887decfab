#pragma once
// Benchmark sweeps in the lab store: one benchmarks row per sweep (with the exact
// command) and one benchmark_levels row per concurrency level, written as each level
// finishes so that a crash keeps every finished level.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/bench/level_metrics.h"
#include "core/store/lab_store.h"

namespace crosslab::bench {

struct BenchmarkHeader {
  std::string label, url, model, endpoint, command;
  std::optional<double> pricePerHour;
  std::optional<std::int64_t> boxId{}, venueId{};  // the box measured, when the server ran on one
};

// How a sweep ended. Running: still going, or its process died before saying.
enum class SweepStatus { Running, Done, Stopped, Failed };
const char* sweepStatusName(SweepStatus status);  // "running", "done", "stopped", "failed"
SweepStatus sweepStatusFrom(const std::string& name);  // unknown or empty (before schema 4): Done

struct StoredLevel {
  int concurrency = 0;
  std::int64_t completed = 0, failed = 0;
  double outputThroughput = 0, perStreamTokS = 0, meanTtftMs = 0, p99TpotMs = 0;
  std::optional<double> usdPerMOutputTokens;
  std::string collapse;
  std::string resultJson;
  bool perStreamMeasured = true;  // false: NULL in the lab (every reply read at once), perStreamTokS 0
};

struct StoredBenchmark {
  std::int64_t id = 0;
  BenchmarkHeader header;
  std::string startedAt, endedAt;
  SweepStatus status = SweepStatus::Done;
  std::string error;                // why it failed (or stopped early); empty when done
  std::vector<StoredLevel> levels;  // by concurrency; measurements only
};

class BenchStore {
 public:
  explicit BenchStore(store::LabStore& lab) : lab_(lab) {}

  std::int64_t begin(const BenchmarkHeader& header);  // status running
  // Upserts the level row (a rerun of one level replaces it). A level in which no request
  // completed measured nothing: it is not saved (returns false; its failure belongs in
  // end()'s error), unless it ended in a collapse, which is what it measured.
  bool saveLevel(std::int64_t benchmarkId, const LevelResult& level);
  void end(std::int64_t benchmarkId, SweepStatus status = SweepStatus::Done, const std::string& error = {});
  // Every benchmark, oldest first, with its levels.
  std::vector<StoredBenchmark> list();

 private:
  store::LabStore& lab_;
};

}  // namespace crosslab::bench
