// `crosslab-cli bench` as a user runs it, against the loopback stand-in server in this
// process: JSON Lines per level with vLLM's keys, rows in the lab store with the exact
// command, live decode-collapse and stall detection stopping the sweep, the API key
// sent but never stored, and one-line errors for bad input.
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "backends/bench/standin_server.h"
#include "core/bench/bench_store.h"
#include "core/store/lab_store.h"

using namespace crosslab;
using nlohmann::json;

namespace {

using Result = crosslab::testing::CliResult;

Result cli(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return crosslab::testing::runCli(args, env);
}

std::vector<json> readLines(const QString& path) {
  std::vector<json> out;
  std::ifstream in(path.toStdString());
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// `bench` against a stand-in with `cfg`, watching over a 1 s window, its JSON lines in `lines`.
Result sweepStandin(const backends::StandinConfig& cfg, const QString& levels, int prompts, int outputLen,
                    const QString& jsonl, std::vector<json>& lines) {
  backends::StandinServer server(cfg);
  server.start();
  auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin", "--concurrency",
                levels, "--num-prompts", QString::number(prompts), "--output-len", QString::number(outputLen),
                "--watch-window", "1", "--save-result", jsonl});
  if (r.code == 0) lines = readLines(jsonl);
  return r;
}

// Empty when the sweep wrote `levels` lines and none has a collapse; else what is wrong.
std::string everyLevelUnflagged(const std::vector<json>& lines, size_t levels) {
  if (lines.size() != levels) return std::to_string(lines.size()) + " levels, not " + std::to_string(levels);
  for (const auto& l : lines)
    if (!l["collapse"].is_null()) return l.dump();
  return {};
}

}  // namespace

class TestBenchCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  // A level whose replies each came in one read (a client given no CPU while short replies
  // streamed; here the stand-in writes each reply whole after the first level's requests) has
  // no per-stream rate: the JSON says null, the lab NULL, and no collapse is judged from it, so
  // the sweep goes on (it used to flag "per-stream 0 tok/s" and stop there).
  void aLevelReadAtOnceIsNoCollapse() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.wholeRepliesAfter = 4;  // the four requests of concurrency 1 are paced
    backends::StandinServer server(cfg);
    server.start();
    const QString lab = tmp_.filePath("lab-whole");
    store::LabStore::create(lab.toStdString(), "t");
    const QString jsonl = tmp_.filePath("whole.jsonl");
    const auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin",
                        "--concurrency", "1,2,4", "--num-prompts", "4", "--output-len", "16", "--input-len", "8",
                        "--label", "whole replies", "--lab", lab, "--save-result", jsonl});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto lines = readLines(jsonl);
    QCOMPARE(lines.size(), size_t(3));  // every level ran
    QVERIFY(lines[0]["per_stream_tok_s"].get<double>() > 0);
    for (size_t i : {size_t(1), size_t(2)}) {
      QVERIFY2(lines[i]["per_stream_tok_s"].is_null(), lines[i].dump().c_str());
      QVERIFY2(lines[i]["collapse"].is_null(), lines[i].dump().c_str());
      QCOMPARE(lines[i]["completed"].get<int>(), 4);
    }
    QVERIFY2(r.out.contains("c=2  completed 4  failed 0  output") && r.out.contains("per-stream n/a"),
             r.out.constData());
    auto store = store::LabStore::open(lab.toStdString());
    auto st = store.db().prepare(
        "SELECT concurrency, per_stream_tok_s IS NULL, collapse IS NULL FROM benchmark_levels ORDER BY concurrency");
    std::vector<std::string> rows;
    while (st.step()) {
      const auto field = [&](int i) { return std::to_string(st.int64(i)); };
      rows.push_back(field(0) + " " + field(1) + " " + field(2));
    }
    QCOMPARE(rows, (std::vector<std::string>{"1 0 1", "2 1 1", "4 1 1"}));
  }

  void sweepWritesJsonLinesAndStore() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.001;
    backends::StandinServer server(cfg);
    server.start();
    const QString lab = tmp_.filePath("lab");
    store::LabStore::create(lab.toStdString(), "t");
    const QString jsonl = tmp_.filePath("res.jsonl");
    const auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin",
                        "--concurrency", "1,4", "--num-prompts", "6", "--output-len", "16", "--input-len", "8",
                        "--price-per-hour", "2.99", "--label", "stand-in, loopback", "--lab", lab,
                        "--save-result", jsonl, "--warmup", "1"});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.out.contains("c=4  completed 6  failed 0"));
    const auto lines = readLines(jsonl);
    QCOMPARE(lines.size(), size_t(2));
    QCOMPARE(lines[1]["max_concurrency"].get<int>(), 4);
    QCOMPARE(lines[1]["completed"].get<int>(), 6);
    QCOMPARE(lines[1]["total_output_tokens"].get<int>(), 6 * 16);
    QCOMPARE(lines[1]["output_tokens_source"].get<std::string>(), std::string("usage"));
    QVERIFY(lines[1]["usd_per_m_output_tokens"].get<double>() > 0);
    for (const char* k : {"mean_ttft_ms", "p99_tpot_ms", "median_itl_ms", "std_e2el_ms", "per_stream_tok_s",
                          "request_throughput", "total_token_throughput", "max_output_tokens_per_s", "collapse"})
      QVERIFY2(lines[0].contains(k), k);
    QCOMPARE(server.generationRequests(), 1 + 6 + 6);  // warm-up included
    // Connections kept across the warm-up and the levels, as vLLM's client keeps them: the
    // warm-up's serves the first level; the second opens three more. One more: the read of the
    // server's /metrics, which the stand-in does not serve (404): asked once, no level has a
    // server reading, and the summary says why.
    QCOMPARE(lines[0]["connections_opened"].get<int>(), 0);
    QCOMPARE(lines[1]["connections_opened"].get<int>(), 3);
    QCOMPARE(server.connectionsAccepted(), 4 + 1);
    QVERIFY(lines[0]["server"].is_null() && lines[1]["server"].is_null());
    QVERIFY2(r.out.contains("server's /metrics: HTTP 404\n"), r.out.constData());

    auto store = store::LabStore::open(lab.toStdString());
    const auto all = bench::BenchStore(store).list();
    QCOMPARE(all.size(), size_t(1));
    QCOMPARE(all[0].header.label, std::string("stand-in, loopback"));
    QVERIFY(all[0].header.command.find("crosslab-cli bench --url") == 0);
    QVERIFY(all[0].header.command.find("'stand-in, loopback'") != std::string::npos);
    QCOMPARE(all[0].levels.size(), size_t(2));
    QVERIFY(all[0].levels[1].outputThroughput > 0);
  }

  // The warm-up runs concurrently up to the widest level, as vLLM's does: four warm-up requests
  // before levels 1 and 4 open the four connections both levels then use.
  void warmUpRunsUpToTheWidestLevel() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.01;  // the four overlap
    backends::StandinServer server(cfg);
    server.start();
    const QString jsonl = tmp_.filePath("warm.jsonl");
    const auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin",
                        "--concurrency", "1,4", "--num-prompts", "4", "--output-len", "8", "--warmup", "4",
                        "--save-result", jsonl});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto lines = readLines(jsonl);
    QCOMPARE(lines.size(), size_t(2));
    QCOMPARE(lines[0]["connections_opened"].get<int>(), 0);
    QCOMPARE(lines[1]["connections_opened"].get<int>(), 0);
    QCOMPARE(server.connectionsAccepted(), 4 + 1);  // and the /metrics read
    QCOMPARE(server.generationRequests(), 4 + 4 + 4);
  }

  // --no-keep-alive: "Connection: close" and a new connection for every request.
  void noKeepAliveOpensAConnectionPerRequest() {
    backends::StandinServer server({});
    server.start();
    const QString jsonl = tmp_.filePath("closing.jsonl");
    const auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin",
                        "--concurrency", "2", "--num-prompts", "5", "--output-len", "4", "--no-keep-alive",
                        "--save-result", jsonl});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto lines = readLines(jsonl);
    QCOMPARE(lines.size(), size_t(1));
    QCOMPARE(lines[0]["completed"].get<int>(), 5);
    QCOMPARE(lines[0]["connections_opened"].get<int>(), 5);
    QCOMPARE(server.connectionsAccepted(), 5 + 1);  // and the /metrics read
  }

  void collapseStopsTheSweep() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;          // 1 stream: ~500 tok/s
    cfg.collapseAboveStreams = 1;   // more streams: 5 tok/s each
    std::vector<json> lines;
    const auto r = sweepStandin(cfg, "1,4,16", 4, 200, tmp_.filePath("collapse.jsonl"), lines);
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(lines.size(), size_t(2));  // c=16 never ran
    QVERIFY(lines[0]["collapse"].is_null());
    const std::string why = lines[1]["collapse"].get<std::string>();
    QVERIFY2(why.find("decode collapse: per-stream") == 0 && why.find("at concurrency 4") != std::string::npos,
             why.c_str());
    QVERIFY(r.out.contains("sweep stopped: decode collapse"));
    QVERIFY(lines[1]["failed"].get<int>() > 0);  // in-flight requests are counted, not dropped
    QCOMPARE(lines[1]["completed"].get<int>(), 0);  // stopped live (200 tokens at 5 tok/s would take 40 s)…
    QVERIFY2(r.out.contains("saturation: not reached before the sweep stopped"),  // …so no knee "-> 0.0"
             r.out.constData());
  }

  // A saturated engine (more streams share two streams' pace): per stream falls to 1/32 of one
  // stream's at c=64, but the streams together decode twice what one did, so every level runs.
  void aSaturatedEngineIsNoCollapse() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;     // 1 stream: ~500 tok/s
    cfg.fullPaceStreams = 2;   // more streams: ~1000 tok/s among them
    std::vector<json> lines;
    const auto r = sweepStandin(cfg, "1,4,64", 64, 50, tmp_.filePath("saturated.jsonl"), lines);
    QVERIFY2(r.code == 0, r.err.constData());
    const auto unflagged = everyLevelUnflagged(lines, 3);
    QVERIFY2(unflagged.empty(), unflagged.c_str());
    // What the old rule (per stream under a tenth of one stream's) would have stopped on.
    const double one = lines[0]["per_stream_tok_s"].get<double>(), at64 = lines[2]["per_stream_tok_s"].get<double>();
    QVERIFY2(at64 < 0.1 * one && at64 * 64 > one, (std::to_string(one) + " / " + std::to_string(at64)).c_str());
    QVERIFY(!r.out.contains("collapse"));
  }

  // The seed's Spark shape: c=8 decodes 8 × 500, then c=16 slows to ~40 tok/s a stream — more
  // than one stream decoded alone, less than half of what c=8 did together; seen live, over the
  // watch window, before the level ends.
  void aBatchThatDecodesHalfAsMuchIsACollapse() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.collapseAboveStreams = 8;
    cfg.collapsedIntervalS = 0.025;
    std::vector<json> lines;
    const auto r = sweepStandin(cfg, "1,8,16", 16, 200, tmp_.filePath("halved.jsonl"), lines);
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(lines.size(), size_t(3));
    QVERIFY(lines[0]["collapse"].is_null() && lines[1]["collapse"].is_null());
    QVERIFY2(lines[2]["collapse"].is_string(), lines[2].dump().c_str());
    const std::string why = lines[2]["collapse"].get<std::string>();
    QVERIFY2(why.find("decode collapse: per-stream") == 0 && why.find("over the last 1 s at concurrency 16: 16 streams "
                                                                      "together decode") != std::string::npos &&
                 why.find("< 0.50 x the") != std::string::npos && why.find("of concurrency 8") != std::string::npos,
             why.c_str());
    QVERIFY(r.out.contains("sweep stopped: decode collapse"));
  }

  // A server that streams three tokens a chunk (usage says so): the live check counts chunks, so
  // it weighs them by the earlier levels' tokens per chunk. Saturated at two streams' pace, c=16
  // decodes as much together as c=2 did; read as one token a chunk it would look a third of that.
  void chunksOfSeveralTokensAreJudgedInTokens() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.fullPaceStreams = 2;
    cfg.tokensPerFrame = 3;
    std::vector<json> lines;
    const auto r = sweepStandin(cfg, "1,2,16", 16, 450, tmp_.filePath("three_a_chunk.jsonl"), lines);
    QVERIFY2(r.code == 0, r.err.constData());
    const auto unflagged = everyLevelUnflagged(lines, 3);
    QVERIFY2(unflagged.empty(), unflagged.c_str());
    QCOMPARE(lines[2]["total_output_tokens"].get<int>(), 16 * 450);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, backends::StandinServer([] {
                               backends::StandinConfig c;
                               c.tokensPerFrame = 0;
                               return c;
                             }()));
  }

  void stalledStreamsStopTheSweep() {
    backends::StandinConfig cfg;
    cfg.intervalS = 0.002;
    cfg.faults = {{backends::StandinFault::Kind::StallAfter, 3}};
    backends::StandinServer server(cfg);
    server.start();
    const auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin",
                        "--concurrency", "2,4", "--num-prompts", "2", "--output-len", "50", "--stall-seconds", "1"});
    QCOMPARE(r.code, 1);  // nothing completed
    QVERIFY2(r.err.contains("aborted: streams stopped producing"), r.err.constData());
    QVERIFY(!r.out.contains("level c=4"));
  }

  void apiKeyIsSentButNeverStored() {
    backends::StandinConfig cfg;
    cfg.apiKey = "sk-secret-1234";  // the stand-in answers 401 without it
    backends::StandinServer server(cfg);
    server.start();
    const QString lab = tmp_.filePath("keylab");
    store::LabStore::create(lab.toStdString(), "k");
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("BENCH_TEST_KEY", "sk-secret-1234");
    auto r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin", "--concurrency",
                  "1", "--num-prompts", "1", "--output-len", "2", "--api-key-env", "BENCH_TEST_KEY", "--lab", lab},
                 env);
    QVERIFY2(r.code == 0, r.err.constData());
    QFile db(lab + "/lab.sqlite");
    QVERIFY(db.open(QIODevice::ReadOnly));
    QVERIFY(!db.readAll().contains("sk-secret-1234"));
    QVERIFY(!r.out.contains("sk-secret") && !r.err.contains("sk-secret"));
    QVERIFY(r.out.contains("completed 1  failed 0"));
    env.insert("BENCH_TEST_KEY", "sk-wrong");
    r = cli({"bench", "--url", QString::fromStdString(server.baseUrl()), "--model", "standin", "--concurrency", "1",
             "--num-prompts", "1", "--api-key-env", "BENCH_TEST_KEY"}, env);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("HTTP 401: Unauthorized"), r.err.constData());
    QVERIFY(!r.err.contains("sk-wrong"));
    env.remove("BENCH_TEST_KEY");
    r = cli({"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--api-key-env", "BENCH_TEST_KEY"}, env);
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("BENCH_TEST_KEY (--api-key-env) is not set"));
  }

  void badInputGetsOneLineErrors() {
    struct Case {
      QStringList args;
      int code;
      QString message;
    };
    const QList<Case> cases = {
        {{"bench", "--model", "m"}, 2, "--url is required"},
        {{"bench", "--url", "https://x", "--model", "m"}, 1, "URL must start with http://"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1,x"}, 2, "needs a number"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--num-prompts", "3", "--duration", "2"}, 2,
         "not both"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--endpoint", "embed"}, 1,
         "endpoint must be completions or chat"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1", "--num-prompts", "2"}, 1,
         "connect to 127.0.0.1:1"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--save-result", "/no/such/dir/r.jsonl"}, 1,
         "cannot write --save-result /no/such/dir/r.jsonl"},
        {{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--lab", "/no/such/lab"}, 1, "lab"},
    };
    for (const auto& c : cases) {
      const auto r = cli(c.args);
      QVERIFY2(r.code == c.code, qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + " " + r.err));
      QVERIFY2(r.err.contains(c.message.toUtf8()), r.err.constData());
      QVERIFY2(r.err.trimmed().split('\n').size() <= 2, r.err.constData());  // message (+ usage line)
    }
  }
};

QTEST_GUILESS_MAIN(TestBenchCli)
#include "test_bench_cli.moc"
