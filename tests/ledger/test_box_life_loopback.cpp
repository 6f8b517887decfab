// A box life run through crosslab on the loopback box (a real OpenSSH sshd): push weights,
// a remote training run, a server on the box and a throughput sweep through the tunnel,
// then the box removed. The ledger must show staging > 0 and compute > 0 without any
// manual entry: every minute comes from what crosslab recorded as it happened.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTcpServer>
#include <QtTest>

#include <cmath>

#include "sshd_fixture.h"
#include "tests/support/cli_runner.h"

namespace {

void writeFile(const QString& path, const QByteArray& data) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(data);
}

int freePort() {
  QTcpServer s;
  s.listen(QHostAddress::LocalHost, 0);
  return s.serverPort();
}

}  // namespace

class TestBoxLifeLoopback : public QObject {
  Q_OBJECT
  QTemporaryDir home_;
  SshdFixture sshd_;

  QProcessEnvironment env() {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("CROSSLAB_HOME", home_.path());
    e.remove("SSH_AUTH_SOCK");
    return e;
  }
  crosslab::testing::CliResult cli(const QStringList& args) { return crosslab::testing::runCli(args, env()); }

 private slots:
  void initTestCase() {
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
  }

  void aLifeThroughCrosslabYieldsItsLedger() {
    QByteArray weights(3'000'000, 'w');
    writeFile(home_.filePath("weights.bin"), weights);
    writeFile(home_.filePath("data.json"), R"([{"instruction": "q", "input": "", "output": "a"}])");
    writeFile(home_.filePath("r.json"), R"({"model": "/models/llama-3.1-8b", "lora_rank": 16})");
    auto r = cli({"box", "add", "loop", "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                  sshd_.user(), "--key", sshd_.userKey(), "--price-per-hour", "6"});
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(cli({"box", "exec", "loop", "--accept-new", "--", "true"}).code, 0);

    QCOMPARE(cli({"box", "exec", "loop", "--", "mkdir", "-p", home_.filePath("box/models")}).code, 0);
    r = cli({"box", "push", "loop", home_.filePath("weights.bin"), home_.filePath("box/models/weights.bin")});
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli({"remote", "train", "--box", "loop", "--engine", "crosslab", "--recipe", home_.filePath("r.json"), "--data",
             home_.filePath("data.json"), "--launcher",
             "sh " + QStringLiteral(CROSSLAB_TESTS_DIR "/backends/fake_crosslab_train.sh"), "--poll-ms", "50",
             "--workdir", home_.filePath("box/run"), "--json"});
    QVERIFY2(r.code == 0, r.err.constData());

    // A server on the box, reached through the tunnel, and a sweep against it: one level, so a loaded
    // machine cannot make the sweep judge a collapse and stop (a stopped sweep is not finished work).
    const int port = freePort();
    QProcess serve;
    crosslab::testing::CliOptions serveOptions;
    serveOptions.env = env();
    crosslab::testing::startCli(serve, {"remote", "serve", "--box", "loop", "--engine", "crosslab", "--model", "/m", "--port",
                               QString::number(port), "--launcher",
                               crosslab::testing::cliPath() + " bench standin --port " + QString::number(port) + " --seconds 300",
                               "--workdir", home_.filePath("box/serve"), "--for", "300", "--stop-on-exit"},
                                serveOptions);
    QVERIFY(serve.waitForReadyRead(120000));
    const auto info = QJsonDocument::fromJson(serve.readLine()).object();
    const int local = info.value("local_port").toInt();
    QVERIFY2(local > 0, serve.readAllStandardError().constData());
    r = cli({"bench", "--url", "http://127.0.0.1:" + QString::number(local), "--model", "standin", "--concurrency",
             "1", "--num-prompts", "4", "--output-len", "16", "--input-len", "16", "--lab", home_.filePath("home"),
             "--box", "loop", "--label", "loop standin"});
    QVERIFY2(r.code == 0, r.err.constData());
    // The sweep gave the life its first token: the timeline holds it once, tied to the box.
    QCOMPARE(cli({"bench", "--url", "http://127.0.0.1:" + QString::number(local), "--model", "standin", "--concurrency",
                  "1", "--num-prompts", "2", "--output-len", "8", "--input-len", "8", "--lab", home_.filePath("home"),
                  "--box", "loop", "--label", "again"}).code, 0);
    r = cli({"venues", "timeline", "loop", "--json"});
    QCOMPARE(r.code, 0);
    QStringList firstTokens;
    for (const auto& m : QJsonDocument::fromJson(r.out).object().value("milestones").toArray())
      if (m.toObject().value("milestone").toString() == "first token")
        firstTokens << m.toObject().value("note").toString();
    QCOMPARE(firstTokens, QStringList({"bench sweep loop standin"}));  // the first sweep's, once
    serve.terminate();
    QVERIFY(serve.waitForFinished(60000));
    QCOMPARE(serve.exitCode(), 0);

    QCOMPARE(cli({"box", "remove", "loop"}).code, 0);

    // What was recorded, item by item, first: a failure below then says which item.
    r = cli({"ledger", "export", "--no-redact"});
    QCOMPARE(r.code, 0);
    const auto exported = QJsonDocument::fromJson(r.out).object();
    QVERIFY(!exported.value("deleted_at").isNull());
    QStringList work;
    for (const auto& w : exported.value("work").toArray())
      work << w.toObject().value("kind").toString() + ":" + w.toObject().value("status").toString();
    QCOMPARE(work, QStringList({"train:finished", "serve:finished", "bench:finished", "bench:finished"}));
    // The ledger, from what was recorded: no import, no hand entry.
    r = cli({"ledger", "--json"});
    QCOMPARE(r.code, 0);
    const auto lives = QJsonDocument::fromJson(r.out).object().value("lives").toArray();
    QCOMPARE(lives.size(), 1);
    const auto life = lives[0].toObject();
    QVERIFY2(life.value("staging_minutes").toDouble() > 0, r.out.constData());
    QVERIFY2(life.value("compute_minutes").toDouble() > 0, r.out.constData());
    QVERIFY2(life.value("debug_minutes").toDouble() == 0.0, r.out.constData());  // every work item finished
    QVERIFY2(life.value("compute_usd").toDouble() > 0, r.out.constData());
    // Billed by the rule, whatever the wall time on a loaded machine: started minutes.
    const double used = life.value("used_minutes").toDouble();
    QVERIFY2(used > 0, r.out.constData());
    QVERIFY2(life.value("billed_minutes").toDouble() == std::ceil(used - 1e-6), r.out.constData());
    const auto transfers = exported.value("transfers").toArray();
    QCOMPARE(transfers.size(), 2);  // the weights, then the run folder
    QCOMPARE(transfers[0].toObject().value("bytes").toInteger(), qint64{3'000'000});
    QVERIFY(transfers[0].toObject().value("what").toString().contains("weights.bin"));
    QVERIFY(transfers[1].toObject().value("what").toString().startsWith("run folder"));
    // The sweep's benchmark row names the box.
    r = cli({"lab", "info", home_.filePath("home"), "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("counts").toObject().value("benchmarks").toInt(), 2);
  }
};

QTEST_GUILESS_MAIN(TestBoxLifeLoopback)
#include "test_box_life_loopback.moc"
