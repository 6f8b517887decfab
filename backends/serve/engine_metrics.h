#pragma once
// GET /metrics: the engine's counters in Prometheus's text format (version 0.0.4) under
// vLLM's metric names, so whatever reads a vLLM server's /metrics (Prometheus, Grafana, the
// Benchmarks panel: core/bench/server_metrics.h) reads ours the same way:
//   vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc (gauges)
//   vllm:prompt_tokens_total, vllm:generation_tokens_total (counters)
// each with vLLM's labels model_name and engine="0". Ours alone, with the crosslab: prefix:
//   crosslab:decode_steps_total, crosslab:decode_rows_total, crosslab:decode_step_seconds_total
// (the batch the decode steps ran and what a step cost, as the engine's log line says:
// engine_stats_log.h), and crosslab:engine_seconds_total{phase=...}, where the scheduler
// thread's time went.
#include <string>

#include "core/infer/batch_scheduler.h"

namespace crosslab::serve {

// The exposition for one snapshot of the scheduler's counters; `modelName` is the served id.
std::string prometheusMetrics(const infer::SchedulerStats& s, const std::string& modelName);

// The Content-Type Prometheus's text format is served with.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace crosslab::serve
