#include "core/bench/bench_store.h"

#include <map>

#include <nlohmann/json.hpp>

namespace crosslab::bench {

using store::Transaction;

const char* sweepStatusName(SweepStatus s) {
  switch (s) {
    case SweepStatus::Running: return "running";
    case SweepStatus::Stopped: return "stopped";
    case SweepStatus::Failed: return "failed";
    case SweepStatus::Done: break;
  }
  return "done";
}

SweepStatus sweepStatusFrom(const std::string& name) {
  if (name == "running") return SweepStatus::Running;
  if (name == "stopped") return SweepStatus::Stopped;
  if (name == "failed") return SweepStatus::Failed;
  return SweepStatus::Done;
}

std::int64_t BenchStore::begin(const BenchmarkHeader& h) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare(
      "INSERT INTO benchmarks(label, url, model, endpoint, command, price_per_hour, started_at, box_id, venue_id, status) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, h.label).bind(2, h.url).bind(3, h.model).bind(4, h.endpoint).bind(5, h.command);
  st.bind(6, h.pricePerHour).bind(7, store::utcNow()).bind(8, h.boxId).bind(9, h.venueId);
  st.bind(10, std::string(sweepStatusName(SweepStatus::Running)));
  st.run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

bool BenchStore::saveLevel(std::int64_t benchmarkId, const LevelResult& l) {
  if (l.completed == 0 && l.collapse.empty()) return false;
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare(
      "INSERT OR REPLACE INTO benchmark_levels(benchmark_id, concurrency, completed, failed, "
      "output_throughput, per_stream_tok_s, mean_ttft_ms, p99_tpot_ms, usd_per_m_output_tokens, "
      "collapse, result_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, benchmarkId).bind(2, l.context.maxConcurrency).bind(3, l.completed).bind(4, l.failed);
  st.bind(5, l.outputThroughput).bind(7, l.ttft.meanMs).bind(8, l.tpot.p99Ms);
  st.bind(6, l.perStreamMeasured ? std::optional<double>(l.perStreamTokS) : std::nullopt);
  st.bind(9, l.usdPerMOutputTokens);
  if (l.collapse.empty()) st.bindNull(10); else st.bind(10, l.collapse);
  st.bind(11, levelToJson(l).dump());
  st.run();
  tx.commit();
  return true;
}

void BenchStore::end(std::int64_t benchmarkId, SweepStatus status, const std::string& error) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare("UPDATE benchmarks SET ended_at = ?, status = ?, error = ? WHERE id = ?");
  st.bind(1, store::utcNow()).bind(2, std::string(sweepStatusName(status)));
  if (error.empty()) st.bindNull(3);
  else st.bind(3, error);
  st.bind(4, benchmarkId);
  st.run();
  tx.commit();
}

std::vector<StoredBenchmark> BenchStore::list() {
  auto& db = lab_.db();
  std::vector<StoredBenchmark> out;
  std::map<std::int64_t, size_t> index;
  auto st = db.prepare(
      "SELECT id, label, url, model, endpoint, command, price_per_hour, started_at, ended_at, status, error "
      "FROM benchmarks ORDER BY id");
  while (st.step()) {
    StoredBenchmark b;
    b.id = st.int64(0);
    b.header = {st.text(1), st.text(2), st.text(3), st.text(4), st.text(5), st.optReal(6)};
    b.startedAt = st.text(7);
    b.endedAt = st.isNull(8) ? "" : st.text(8);
    b.status = st.isNull(9) ? SweepStatus::Done : sweepStatusFrom(st.text(9));
    b.error = st.isNull(10) ? "" : st.text(10);
    index[b.id] = out.size();
    out.push_back(std::move(b));
  }
  auto lv = db.prepare(
      "SELECT benchmark_id, concurrency, completed, failed, output_throughput, per_stream_tok_s, "
      "mean_ttft_ms, p99_tpot_ms, usd_per_m_output_tokens, collapse, result_json "
      "FROM benchmark_levels ORDER BY benchmark_id, concurrency");
  while (lv.step()) {
    auto it = index.find(lv.int64(0));
    // Nothing completed and no collapse: no measurement (rows that labs before schema 4 kept).
    if (it == index.end() || (lv.optInt64(2).value_or(0) == 0 && lv.isNull(9))) continue;
    StoredLevel l;
    l.concurrency = static_cast<int>(lv.int64(1));
    l.completed = lv.optInt64(2).value_or(0);
    l.failed = lv.optInt64(3).value_or(0);
    l.outputThroughput = lv.optReal(4).value_or(0);
    l.perStreamMeasured = lv.optReal(5).has_value();
    l.perStreamTokS = lv.optReal(5).value_or(0);
    l.meanTtftMs = lv.optReal(6).value_or(0);
    l.p99TpotMs = lv.optReal(7).value_or(0);
    l.usdPerMOutputTokens = lv.optReal(8);
    l.collapse = lv.isNull(9) ? "" : lv.text(9);
    l.resultJson = lv.text(10);
    out[it->second].levels.push_back(std::move(l));
  }
  return out;
}

}  // namespace crosslab::bench
