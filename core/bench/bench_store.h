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

struct StoredLevel {
  int concurrency = 0;
  std::int64_t completed = 0, failed = 0;
  double outputThroughput = 0, perStreamTokS = 0, meanTtftMs = 0, p99TpotMs = 0;
  std::optional<double> usdPerMOutputTokens;
  std::string collapse;
  std::string resultJson;
};

struct StoredBenchmark {
  std::int64_t id = 0;
  BenchmarkHeader header;
  std::string startedAt, endedAt;
  std::vector<StoredLevel> levels;  // by concurrency
};

class BenchStore {
 public:
  explicit BenchStore(store::LabStore& lab) : lab_(lab) {}

  std::int64_t begin(const BenchmarkHeader& header);
  // Upserts the level row (a rerun of one level replaces it).
  void saveLevel(std::int64_t benchmarkId, const LevelResult& level);
  void end(std::int64_t benchmarkId);
  // Every benchmark, oldest first, with its levels.
  std::vector<StoredBenchmark> list();

 private:
  store::LabStore& lab_;
};

}  // namespace crosslab::bench
