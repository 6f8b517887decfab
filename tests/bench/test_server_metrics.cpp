// The Benchmarks panel's reader of a server's Prometheus /metrics (core/bench/server_metrics.h):
// vLLM's exposition as its server writes it (two engines, histograms, _created samples, labels
// holding commas and braces), the names older vLLMs used, what two snapshots say, and text that
// is not Prometheus's format refused with the line that is wrong; a level's stored reading read
// back.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/bench/server_metrics.h"

using namespace crosslab::bench;

namespace {

// The shape of vLLM's /metrics (prometheus_client's text format), two engines (data parallel).
// (Ordinary literals: moc reads a raw string's "# HELP" lines as directives.)
const char* kVllm =
    "# HELP python_gc_objects_collected_total Objects collected during gc\n"
    "# TYPE python_gc_objects_collected_total counter\n"
    "python_gc_objects_collected_total{generation=\"0\"} 12345.0\n"
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 30.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 34.0\n"
    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 0.0\n"
    "vllm:num_requests_waiting{engine=\"1\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 2.0\n"
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 0.25\n"
    "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 0.75\n"
    "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 1000.0\n"
    "vllm:generation_tokens_total{engine=\"1\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 2000.0\n"
    "vllm:generation_tokens_created{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 1.7648e+09\n"
    "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 500.0\n"
    "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.001\",model_name=\"m\"} 0.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 7.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} NaN\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"odd, {name} \\\"q\\\"\"} 3.0 1764800000000\n";

}  // namespace

class TestServerMetrics : public QObject {
  Q_OBJECT

 private slots:
  // Samples summed per name over their label sets, counters found with or without _total,
  // comments skipped, a timestamp after the value allowed.
  void readsVllmsExposition() {
    std::string error;
    const auto snap = parsePrometheusText(kVllm, &error);
    QVERIFY2(snap, error.c_str());
    QCOMPARE(*snap->gauge("vllm:num_requests_running"), 64.0);
    QCOMPARE(*snap->gauge("vllm:num_requests_waiting"), 2.0);
    QCOMPARE(*snap->mean("vllm:kv_cache_usage_perc"), 0.5);  // two engines' usage: their mean
    QCOMPARE(*snap->counter("vllm:generation_tokens"), 3000.0);
    QCOMPARE(*snap->counter("vllm:generation_tokens_total"), 3000.0);
    QCOMPARE(*snap->counter("vllm:request_success"), 3.0);
    QCOMPARE(*snap->counter("vllm:time_to_first_token_seconds_bucket"), 7.0);
    QVERIFY(std::isnan(*snap->gauge("vllm:time_to_first_token_seconds_sum")));
    QVERIFY(!snap->counter("crosslab:decode_steps"));
    QVERIFY(!snap->gauge("vllm:generation_tokens"));  // a gauge is looked up by its own name only
  }

  // Two snapshots of vLLM: the tokens between them, the gauges of the later one; no decode
  // steps (vLLM does not export ours) and a sweep line that says both counts.
  void readingBetweenTwoSnapshots() {
    const auto a = parsePrometheusText(kVllm);
    std::string later = kVllm;
    later.replace(later.find("} 1000.0"), 8, "} 1768.0");
    later.replace(later.find("} 500.0"), 7, "} 596.0");
    later.replace(later.find("} 30.0"), 6, "} 0.0");
    later.replace(later.find("} 34.0"), 6, "} 0.0");
    later.replace(later.find("} 2.0\n"), 5, "} 0.0");
    const auto b = parsePrometheusText(later);
    QVERIFY(a && b);
    const ServerReading r = serverReading(*a, *b, 4.0);
    QCOMPARE(*r.generatedTokens, 768.0);
    QCOMPARE(*r.promptTokens, 96.0);
    QCOMPARE(*r.running, 0.0);
    QVERIFY(!r.decodeSteps);
    QCOMPARE(QString::fromStdString(describeSweep(r, 768)),
             QString("768 tokens generated (the client counted 768), 96 prompt tokens; now 0 running, 0 waiting"));
    QCOMPARE(QString::fromStdString(describeLive(r)),
             QString("192 tok/s generated, 0 running, 0 waiting, KV cache 50% in use"));
    // A counter that went down: the server restarted; its new count is what it did since.
    const ServerReading back = serverReading(*b, *a, 1.0);
    QCOMPARE(*back.generatedTokens, 3000.0);
  }

  // vLLM before 0.10: the KV gauge was gpu_cache_usage_perc, counters lacked _total.
  void readsOlderNames() {
    const auto a = parsePrometheusText("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.125\n"
                                       "vllm:generation_tokens{model_name=\"m\"} 10\n");
    const auto b = parsePrometheusText("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
                                       "vllm:generation_tokens{model_name=\"m\"} 50\r\n");
    QVERIFY(a && b);
    const ServerReading r = serverReading(*a, *b, 2.0);
    QCOMPARE(*r.kvUsage, 0.5);
    QCOMPARE(*r.generatedTokens, 40.0);
    QVERIFY(!r.running);
    QCOMPARE(QString::fromStdString(describeLive(r)), QString("20 tok/s generated, ? running, ? waiting, KV cache 50% in use"));
  }

  // What a server without /metrics answers, and text cut off: refused with the line and why.
  void refusesWhatIsNotTheFormat() {
    const struct {
      const char* text;
      const char* error;
    } cases[] = {
        {"<!DOCTYPE html>\n<html><body>Not Found</body></html>\n", "line 1: not a metric name"},
        {"{\"object\":\"error\",\"message\":\"no route GET /metrics\"}", "line 1: not a metric name"},
        {"# TYPE a gauge\na{b=\"c}\"} 1\nvllm:x{model_name=\"m", "line 3: labels not closed"},
        {"vllm:x 1 then words\n", "line 1: text after the value"},
        {"vllm:x\n", "line 1: no value"},
        {"vllm:x one\n", "line 1: no value"},
    };
    for (const auto& c : cases) {
      std::string error;
      QVERIFY2(!parsePrometheusText(c.text, &error), c.text);
      QVERIFY2(error.rfind(c.error, 0) == 0, qPrintable(QString("%1 -> %2").arg(c.text, QString::fromStdString(error))));
    }
    std::string error;
    const auto empty = parsePrometheusText("", &error);  // a server with no metrics yet: an empty scrape
    QVERIFY(empty && empty->values.empty());
  }

  // A level's reading as bench stores it (serverReadingToJson under "server", the client's
  // count beside it), read back the one way the report and the panel read it; a level without
  // one, or JSON that does not parse, has none rather than a half-read one.
  void readsAStoredLevelBack() {
    ServerReading r;
    r.generatedTokens = 808;
    r.decodeSteps = 100;
    r.decodeRows = 310;
    r.decodeStepSeconds = 0.085;
    nlohmann::json level = {{"max_concurrency", 4}, {"total_output_tokens", 768}, {"server", serverReadingToJson(r)}};
    const auto c = storedServerCount(level.dump());
    QVERIFY(c);
    QCOMPARE(c->generatedTokens, 808.0);
    QCOMPARE(*c->clientOutputTokens, 768.0);
    QCOMPARE(*c->serverMinusClient(), 40.0);
    QCOMPARE(*c->decodeRowsPerStep, 3.1);
    QCOMPARE(*c->decodeStepMs, 0.85);
    // vLLM: no decode counters, so those stay empty; a client count that was not stored.
    r.decodeSteps.reset();
    level = {{"server", serverReadingToJson(r)}};
    const auto v = storedServerCount(level.dump());
    QVERIFY(v && !v->decodeRowsPerStep && !v->decodeStepMs && !v->clientOutputTokens && !v->serverMinusClient());
    for (const char* none : {"{\"total_output_tokens\": 768}", "{\"server\": null}", "{\"server\": {\"generated_tokens\": null}}",
                             "{\"server\": {\"generated_tokens\": \"808\"}}", "{\"server\": {\"generated_tokens\": 8",
                             "[]", ""})
      QVERIFY2(!storedServerCount(none), none);
  }
};

QTEST_GUILESS_MAIN(TestServerMetrics)
#include "test_server_metrics.moc"
