// The server's engine lines (backends/serve/engine_stats_log.h): what a line says for two
// snapshots of the scheduler's counters, quiet while idle; and `crosslab-cli serve` printing
// them on stderr while it serves, their token counts adding up to the completions' usage, and
// none with --disable-log-stats.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include "backends/serve/engine_stats_log.h"
#include "tests/serve/serve_fixture.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;
using nlohmann::json;

namespace {

// Starts `serve` on the fixture and returns its port (0: it did not say it listens).
int startServe(QProcess& p, const std::string& dir, const QStringList& extra) {
  QStringList args = {"serve", "--model", QString::fromStdString(dir), "--served-model-name", "base", "--port", "0",
                      "--max-batch", "4", "--max-model-len", "512"};
  testing::startCli(p, args + extra);
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
Usage complete(int port, int maxTokens) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
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
};

QTEST_GUILESS_MAIN(TestServeStats)
#include "test_serve_stats.moc"
