// The server's engine lines (backends/serve/engine_stats_log.h): what a line says for two
// snapshots of the scheduler's counters, quiet while idle; and `crosslab-cli serve` printing
// them on stderr while it serves, their token counts adding up to the completions' usage, and
// none with --disable-log-stats. GET /metrics (engine_metrics.h): vLLM's counters read back by
// the Benchmarks panel's parser (core/bench/server_metrics.h), counting what the completions'
// usage says, open without the API key as vLLM's is; the panel's poller reading it while
// completions run, and giving up on a server that has no /metrics or does not answer.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <csignal>
#include <thread>

#include "backends/bench/server_metrics_poller.h"
#include "backends/serve/engine_metrics.h"
#include "backends/serve/engine_stats_log.h"
#include "core/bench/server_metrics.h"
#include "tests/serve/serve_fixture.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;
using nlohmann::json;

namespace {

// Starts `serve` on the fixture and returns its port (0: it did not say it listens).
int startServe(QProcess& p, const std::string& dir, const QStringList& extra,
               const testing::CliOptions& options = {}) {
  QStringList args = {"serve", "--model", QString::fromStdString(dir), "--served-model-name", "base", "--port", "0",
                      "--max-batch", "4", "--max-model-len", "512"};
  testing::startCli(p, args + extra, options);
  if (!p.waitForStarted()) return 0;
  QByteArray line;
  for (int i = 0; i < 600 && !line.contains('\n'); ++i) {
    p.waitForReadyRead(100);
    line += p.readAllStandardOutput();
  }
  if (!line.startsWith("listening on http://127.0.0.1:")) return 0;
  return line.trimmed().split(':').last().toInt();
}

// Two whole completions from the base model, one after the other; their usage summed.
struct Usage {
  long long prompt = 0, completion = 0;
};
Usage complete(int port, int maxTokens, const std::string& key = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  if (!key.empty()) c.set_bearer_token_auth(key);
  Usage u;
  for (const char* prompt : {"count the lines", "and the tokens"}) {
    const json req = {{"model", "base"}, {"prompt", prompt}, {"max_tokens", maxTokens}, {"temperature", 0},
                      {"ignore_eos", true}};
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    if (!r || r->status != 200) return {};
    const json body = json::parse(r->body);
    u.prompt += body["usage"]["prompt_tokens"].get<long long>();
    u.completion += body["usage"]["completion_tokens"].get<long long>();
  }
  return u;
}

// The engine lines' counts summed: (last S s: P prompt tokens, G generated).
Usage logged(const QByteArray& err, int* lines) {
  static const QRegularExpression re(R"(^engine: .*\(last [0-9.]+ s: ([0-9]+) prompt tokens, ([0-9]+) generated\))");
  Usage u;
  *lines = 0;
  for (const QByteArray& line : err.split('\n')) {
    const auto m = re.match(QString::fromUtf8(line));
    if (!m.hasMatch()) continue;
    ++*lines;
    u.prompt += m.captured(1).toLongLong();
    u.completion += m.captured(2).toLongLong();
  }
  return u;
}

}  // namespace

class TestServeStats : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string dir_;

 private slots:
  void initTestCase() {
    std::signal(SIGPIPE, SIG_IGN);
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.path().toStdString();
    testing::writeServeFixture(dir_);
  }

  // Rates over the interval, counts, the batch the steps ran and what a step cost, and where
  // the scheduler thread's time went; nothing at all for an interval with no work and no
  // request held, a line for one with a request waiting.
  void lineSaysWhatTheEngineDid() {
    infer::SchedulerStats a, b;
    a.promptTokens = 30, a.generatedTokens = 1000, a.steps = 100, a.decodeRows = 3000;
    a.decodeS = 1.0, a.lmHeadS = 0.5, a.prefillS = 0.25, a.sampleS = 0.5, a.emitS = 0.1;
    b = a;
    b.kvSlots = 8, b.freeKvSlots = 5, b.running = 3, b.waiting = 1;
    b.promptTokens += 120, b.generatedTokens += 16005, b.steps += 512, b.decodeRows += 16000;
    b.decodeS += 0.25, b.lmHeadS += 0.046, b.prefillS += 0.5, b.sampleS += 0.1, b.emitS += 0.2;
    const QString line = QString::fromStdString(serve::engineStatsLine(a, b, 10.0));
    QVERIFY2(line.startsWith("engine: prompt 12.0 tok/s, generation 1600.5 tok/s (last 10.0 s: 120 prompt tokens, "
                             "16005 generated); running 3, waiting 1; KV rows 3 of 8 in use; 512 decode steps, "
                             "31.2 rows and 0.58 ms each; "),
             qPrintable(line));
    QVERIFY2(line.endsWith("engine thread: decode 3%, prefill 5%, sampling 1%, emitting 2%"), qPrintable(line));
    QVERIFY(!line.contains('\n'));

    infer::SchedulerStats idle = a;
    QVERIFY(serve::engineStatsLine(a, idle, 10.0).empty());
    idle.waiting = 1;  // a request queued, no step yet: still worth a line
    const QString waiting = QString::fromStdString(serve::engineStatsLine(a, idle, 10.0));
    QVERIFY2(waiting.contains("generation 0.0 tok/s") && waiting.contains("waiting 1") &&
                 !waiting.contains("decode steps"),
             qPrintable(waiting));
  }

  // A real server, lines every 0.2 s: what they count adds up to the two completions' usage
  // (every prompt token prefilled, every completion token generated, once each), and they show
  // the steps' batch. SIGTERM ends it cleanly.
  void cliServeLogsTheEngine() {
    QProcess p;
    const int port = startServe(p, dir_, {"--log-stats-interval", "0.2"});
    QVERIFY(port > 0);
    const Usage want = complete(port, 48);
    QVERIFY(want.prompt > 0 && want.completion == 96);
    QByteArray err;
    int lines = 0;
    Usage got;
    for (int i = 0; i < 600 && (got.prompt < want.prompt || got.completion < want.completion); ++i) {
      p.waitForReadyRead(100);
      err += p.readAllStandardError();
      got = logged(err, &lines);
    }
    QVERIFY2(got.prompt == want.prompt && got.completion == want.completion, err.constData());
    QVERIFY(lines >= 1);
    QVERIFY2(err.contains(" rows and ") && err.contains("KV rows ") && err.contains(" of 4 in use"), err.constData());
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
  }

  // --disable-log-stats: no engine line, however short the interval, through a completion of
  // many steps.
  void disabledStatsPrintNothing() {
    QProcess p;
    const int port = startServe(p, dir_, {"--log-stats-interval", "0.01", "--disable-log-stats"});
    QVERIFY(port > 0);
    QCOMPARE(complete(port, 400).completion, 800);
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(!err.contains("engine:"), err.constData());
    QVERIFY2(err.contains("KV cache: "), err.constData());  // stderr was read: the cache line is there
  }

  // One snapshot's exposition, read back: every value where the parser finds it, the labels
  // vLLM puts on them (the model's id escaped), and the reading two snapshots give.
  void metricsTextReadsBack() {
    infer::SchedulerStats a, b;
    a.kvSlots = 8, a.freeKvSlots = 8;
    b = a;
    b.running = 4, b.waiting = 2, b.freeKvSlots = 4;
    b.promptTokens = 120, b.generatedTokens = 16005, b.steps = 512, b.decodeRows = 16025;
    b.decodeS = 0.25, b.lmHeadS = 0.046, b.prefillS = 0.5, b.sampleS = 0.1, b.emitS = 0.2;
    const std::string text = serve::prometheusMetrics(b, "demo \"lora\"");
    QVERIFY2(text.find("vllm:generation_tokens_total{model_name=\"demo \\\"lora\\\"\",engine=\"0\"} 16005\n") !=
                 std::string::npos,
             text.c_str());
    QVERIFY2(text.find("# TYPE vllm:num_requests_running gauge\n") != std::string::npos, text.c_str());
    std::string error;
    const auto before = bench::parsePrometheusText(serve::prometheusMetrics(a, "m"), &error);
    const auto now = bench::parsePrometheusText(text, &error);
    QVERIFY2(before && now, error.c_str());
    QCOMPARE(*now->counter("vllm:prompt_tokens"), 120.0);
    QCOMPARE(*now->gauge("vllm:kv_cache_usage_perc"), 0.5);
    QCOMPARE(*now->counter("crosslab:engine_seconds"), 0.25 + 0.046 + 0.5 + 0.1 + 0.2);  // four phases
    const bench::ServerReading r = bench::serverReading(*before, *now, 5.0);
    QCOMPARE(QString::fromStdString(bench::describeLive(r)),
             QString("3201 tok/s generated, 4 running, 2 waiting, KV cache 50% in use; decode steps of 31.3 rows, "
                     "0.58 ms each"));
  }

  // A real server's /metrics: zero before any request, then exactly the two completions' usage
  // (prompt and generated tokens), idle gauges, steps of 1 to 4 rows (--max-batch 4). With an
  // API key, /v1 wants it and /metrics does not (vLLM's rule).
  void cliServeCountsInMetrics() {
    testing::CliOptions options;
    options.env.insert("CROSSLAB_TEST_KEY", "sk-metrics-test");
    QProcess p;
    const int port = startServe(p, dir_, {"--api-key-env", "CROSSLAB_TEST_KEY"}, options);
    QVERIFY(port > 0);
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    const auto scrape = [&](bench::MetricsSnapshot& out) {
      auto r = c.Get("/metrics");
      if (!r || r->status != 200) return false;
      if (r->get_header_value("Content-Type") != serve::kPrometheusContentType) return false;
      std::string error;
      auto snap = bench::parsePrometheusText(r->body, &error);
      if (!snap) qWarning("%s", error.c_str());
      if (snap) out = *snap;
      return bool(snap);
    };
    bench::MetricsSnapshot before, after;
    QVERIFY(scrape(before));
    QCOMPARE(*before.counter("vllm:generation_tokens"), 0.0);
    auto denied = c.Get("/v1/models");
    QVERIFY(denied && denied->status == 401);
    const Usage want = complete(port, 48, "sk-metrics-test");
    QCOMPARE(want.completion, 96LL);
    QVERIFY(scrape(after));
    const bench::ServerReading r = bench::serverReading(before, after, 1.0);
    QCOMPARE(*r.generatedTokens, double(want.completion));
    QCOMPARE(*r.promptTokens, double(want.prompt));
    QCOMPARE(*r.running, 0.0);
    QCOMPARE(*r.waiting, 0.0);
    QVERIFY(*r.decodeSteps > 0 && *r.decodeRows >= *r.decodeSteps && *r.decodeRows <= 4 * *r.decodeSteps);
    QVERIFY(*r.decodeStepSeconds > 0);
    QVERIFY(after.gauge("vllm:num_requests_running").has_value());
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
  }

  // `crosslab-cli bench` reads the server's /metrics around each level: the tokens the server
  // generated over a level are the ones the client counted, its decode steps ran 1 to c rows,
  // and it was idle after. --no-server-metrics: no reading, and the summary says why.
  void benchRecordsTheServersCountPerLevel() {
    QProcess p;
    const int port = startServe(p, dir_, {});
    QVERIFY(port > 0);
    const QStringList sweep = {"bench", "--url", QString("http://127.0.0.1:%1").arg(port), "--model", "base",
                               "--concurrency", "1,3", "--num-prompts", "6", "--output-len", "24", "--input-len", "8",
                               "--ignore-eos", "--json"};
    auto r = testing::runCli(sweep);
    QVERIFY2(r.code == 0, r.err.constData());
    json out = json::parse(r.out.toStdString());
    QVERIFY2(out["server_metrics"].is_null(), r.out.constData());
    QCOMPARE(out["levels"].size(), size_t(2));
    for (const json& level : out["levels"]) {
      const json& server = level["server"];
      QVERIFY2(server.is_object(), r.out.constData());
      QCOMPARE(server["generated_tokens"].get<double>(), level["total_output_tokens"].get<double>());
      QCOMPARE(level["total_output_tokens"].get<int>(), 6 * 24);
      const double rows = server["decode_rows_per_step"].get<double>();
      QVERIFY2(rows >= 1.0 && rows <= level["max_concurrency"].get<double>(), r.out.constData());
      QVERIFY(server["decode_step_ms"].get<double>() > 0);
      QCOMPARE(server["running_after"].get<double>(), 0.0);
    }
    r = testing::runCli(sweep + QStringList{"--no-server-metrics"});
    QVERIFY2(r.code == 0, r.err.constData());
    out = json::parse(r.out.toStdString());
    QCOMPARE(out["server_metrics"].get<std::string>(), std::string("not asked (--no-server-metrics)"));
    QVERIFY(out["levels"][0]["server"].is_null());
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
  }

  // The Benchmarks panel's poller (backends/bench/server_metrics_poller.h) on a real server:
  // a first read, live readings every 10 ms while eight 400-token completions run on another
  // thread (each reading counts only its own interval's tokens), and after finish() the
  // whole: exactly the completions' usage.
  void pollerReadsTheServerWhileItWorks() {
    QProcess p;
    const int port = startServe(p, dir_, {});
    QVERIFY(port > 0);
    backends::ServerMetricsPoller poller;
    poller.setInterval(10);
    QSignalSpy first(&poller, &backends::ServerMetricsPoller::firstRead);
    QSignalSpy done(&poller, &backends::ServerMetricsPoller::sweepRead);
    double liveTokens = 0;
    int withTokens = 0;
    connect(&poller, &backends::ServerMetricsPoller::liveReading, this, [&](const bench::ServerReading& r) {
      withTokens += r.generatedTokens && *r.generatedTokens > 0;
      if (r.generatedTokens) liveTokens += *r.generatedTokens;
    });
    poller.start(QString("http://127.0.0.1:%1/").arg(port));
    QTRY_COMPARE_WITH_TIMEOUT(first.count(), 1, 30000);
    QCOMPARE(first.at(0).at(0).toBool(), true);
    std::atomic<long long> prompt{0}, completion{0};
    std::thread client([&] {
      for (int i = 0; i < 4; ++i) {
        const Usage u = complete(port, 400);
        prompt += u.prompt;
        completion += u.completion;
      }
    });
    // Wait for the completions, reading live meanwhile (the event loop runs in QTRY).
    QTRY_VERIFY_WITH_TIMEOUT(completion == 3200, 120000);
    client.join();
    poller.finish();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30000);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    const auto whole = done.at(0).at(1).value<bench::ServerReading>();
    QCOMPARE(*whole.generatedTokens, 3200.0);
    QCOMPARE(*whole.promptTokens, double(prompt));
    // Several readings saw tokens, and added up they never exceed the whole: none counted twice.
    QVERIFY2(withTokens >= 2 && liveTokens <= 3200.0,
             qPrintable(QString("%1 readings with tokens, %2 tokens").arg(withTokens).arg(liveTokens)));
    QVERIFY(!poller.reading());
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
  }

  // A server without /metrics: one read, "HTTP 404", no more. One that accepts and never
  // answers: "no answer" after the timeout. Nothing listening: the socket's error.
  void pollerGivesUpOnServersWithoutMetrics() {
    httplib::Server plain;
    plain.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    const int port = plain.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { plain.listen_after_bind(); });
    backends::ServerMetricsPoller poller;
    QSignalSpy first(&poller, &backends::ServerMetricsPoller::firstRead);
    poller.start(QString("http://127.0.0.1:%1").arg(port));
    QTRY_COMPARE_WITH_TIMEOUT(first.count(), 1, 30000);
    QCOMPARE(first.at(0).at(0).toBool(), false);
    QCOMPARE(first.at(0).at(1).toString(), QString("HTTP 404"));
    QVERIFY(!poller.reading());
    plain.stop();
    serving.join();

    // A listening socket nobody accepts from: the connection completes (the backlog), no reply.
    httplib::Server silent;
    const int silentPort = silent.bind_to_any_port("127.0.0.1");  // bound and listening, never served
    poller.setTimeout(300);
    poller.start(QString("http://127.0.0.1:%1").arg(silentPort));
    QTRY_COMPARE_WITH_TIMEOUT(first.count(), 2, 30000);
    QCOMPARE(first.at(1).at(0).toBool(), false);
    QVERIFY2(first.at(1).at(1).toString().startsWith("no answer in 0.3 s"), qPrintable(first.at(1).at(1).toString()));

    poller.start(QString("http://127.0.0.1:%1").arg(port));  // stopped above: refused
    QTRY_COMPARE_WITH_TIMEOUT(first.count(), 3, 30000);
    QCOMPARE(first.at(2).at(0).toBool(), false);
    QVERIFY2(first.at(2).at(1).toString().contains("refused", Qt::CaseInsensitive), qPrintable(first.at(2).at(1).toString()));
    QSignalSpy done(&poller, &backends::ServerMetricsPoller::sweepRead);
    poller.finish();  // nothing read: no reading, no signal
    QCOMPARE(done.count(), 0);
  }
};

QTEST_GUILESS_MAIN(TestServeStats)
#include "test_serve_stats.moc"
