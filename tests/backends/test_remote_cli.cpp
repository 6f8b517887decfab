// crosslab-cli remote train / remote serve / preflight as a user runs them, against a
// real sshd on loopback; LLaMA-Factory and vLLM are replaced by stand-ins (they cannot
// run here) that speak their file formats and HTTP semantics.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QtTest>

#include <csignal>

#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "http_standin.h"
#include "sshd_fixture.h"
#include "tests/support/cli_runner.h"

namespace {

using Result = crosslab::testing::CliResult;

void writeFile(const QString& path, const QByteArray& data) {
  QDir().mkpath(QFileInfo(path).path());
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(data);
}

}  // namespace

class TestRemoteCli : public QObject {
  Q_OBJECT
  QTemporaryDir home_;
  SshdFixture sshd_;

  Result cli(const QStringList& args) {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("CROSSLAB_HOME", home_.path());
    e.insert("HF_TOKEN", "hf_PLANTEDtokenPLANTEDtokenPLANTED1234");
    return crosslab::testing::runCli(args, e);
  }

  QString recipe(const QString& name, const QByteArray& json) {
    const QString path = home_.filePath(name);
    writeFile(path, json);
    return path;
  }

  // The status reason the lab holds for run `id`.
  QString runReason(qint64 id) {
    auto lab = crosslab::store::LabStore::open(home_.filePath("home").toStdString());
    const auto run = lab.runs().byId(id);
    return run ? QString::fromStdString(run->statusReason) : QString();
  }

  static qint64 pidIn(const QString& file) {
    QFile f(file);
    return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed().toLongLong() : 0;
  }

  // Kills the process group of a run on the loopback box when it goes out of scope: a run the
  // command could not (or, in a failing test, did not) kill.
  static auto killsGroupAtEnd(qint64 group) {
    return qScopeGuard([group] {
      if (group > 0) ::kill(-pid_t(group), SIGKILL);
    });
  }

  QStringList train(const QString& mode, const QString& workdir) {
    return {"remote", "train", "--box", "loop", "--engine", "llamafactory", "--recipe",
            recipe("r.json", R"({"model": "/models/llama-3.1-8b", "lora_rank": 16})"), "--data", home_.filePath("data.json"),
            "--launcher", "sh " + QStringLiteral(CROSSLAB_TESTS_DIR "/backends/fake_llamafactory.sh") + " " + mode, "--poll-ms", "50", "--workdir",
            workdir, "--json"};
  }

 private slots:
  void initTestCase() {
    // The box's `cat`, /bin/cat except where a run directory holds drop-kill (or drop-kill-once,
    // removed as it acts; fake_llamafactory.sh's silent_drop_kill modes): there the read of the
    // run's pid by the command that kills the run (`kill -KILL` in its shell's command line)
    // kills the nearest sshd above it, which drops the SSH connection that command came over,
    // and the shells in between, so that nothing of that command runs on.
    const QString bin = home_.filePath("box-bin");
    writeFile(bin + "/cat",
              "#!/bin/sh\n"
              "if [ \"$1\" = pid ] && tr '\\0' ' ' < /proc/$PPID/cmdline | grep -q 'kill -KILL' &&\n"
              "   { [ -e drop-kill ] || rm drop-kill-once 2>/dev/null; }; then\n"
              "  p=$PPID; shells=\n"
              "  while [ \"$p\" -gt 1 ]; do\n"
              "    [ \"$(/bin/cat /proc/$p/comm)\" = sshd ] && { kill -9 \"$p\" $shells; exit 1; }\n"
              "    shells=\"$shells $p\"\n"
              "    p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)\n"
              "  done\n"
              "fi\n"
              "exec /bin/cat \"$@\"\n");
    QFile(bin + "/cat").setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    sshd_.setRemotePath(bin);
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
    writeFile(home_.filePath("data.json"), R"([{"instruction": "q", "input": "", "output": "a"}])");
    auto r = cli({"box", "add", "loop", "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                  sshd_.user(), "--key", sshd_.userKey()});
    QCOMPARE(r.code, 0);
    QCOMPARE(cli({"box", "exec", "loop", "--accept-new", "--", "true"}).code, 0);  // trust the loopback key once
  }

  void llamaFactoryRunFinishesAndFetchesTheAdapter() {
    const QString wd = home_.filePath("box/run-ok"), fetched = home_.filePath("adapter");
    auto r = cli(train("ok", wd) + QStringList{"--fetch", fetched, "--max-steps", "3"});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile yaml(wd + "/train.yaml");
    QVERIFY(yaml.open(QIODevice::ReadOnly));
    QVERIFY(yaml.readAll().contains("\nmax_steps: 3\n"));  // HF TrainingArguments' key
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("finished"));
    QCOMPARE(res.value("last_step").toInt(), 3);
    QVERIFY(QFile::exists(wd + "/train.yaml"));
    QVERIFY(QFile::exists(wd + "/data/dataset_info.json"));
    QVERIFY(QFile::exists(wd + "/data/data.json"));  // the data file, under its own name
    QVERIFY(QFile::exists(fetched + "/adapter_config.json"));
    QVERIFY(QFile::exists(fetched + "/adapter_model.safetensors"));
    // Recorded in the lab with its steps.
    r = cli({"lab", "info", home_.filePath("home"), "--json"});
    const auto counts = QJsonDocument::fromJson(r.out).object().value("counts").toObject();
    QCOMPARE(counts.value("runs").toInt(), 1);  // this is the first run of the suite
    QCOMPARE(counts.value("metrics").toInt(), 3);
  }

  void ourEngineRunsDetachedAndItsEventsAreFollowed() {
    const QString wd = home_.filePath("box/run-crosslab"), fetched = home_.filePath("adapter-crosslab");
    auto r = cli({"remote", "train", "--box", "loop", "--engine", "crosslab", "--recipe",
                  recipe("rc.json", R"({"model": "/models/llama-3.1-8b", "lora_rank": 16})"), "--data",
                  home_.filePath("data.json"), "--launcher", "sh " + QStringLiteral(CROSSLAB_TESTS_DIR "/backends/fake_crosslab_train.sh"),
                  "--poll-ms", "50", "--workdir", wd, "--fetch", fetched, "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("finished"));
    QCOMPARE(res.value("last_step").toInt(), 2);
    QVERIFY(QFile::exists(wd + "/recipe.json"));
    QVERIFY(QFile::exists(fetched + "/adapter_model.safetensors"));
  }

  // Before the first step the watchdog allows 900 s (models load, data is tokenized);
  // --stall-s bounds that allowance too, so a run stuck before its first step is called
  // stalled after --stall-s, not after 15 minutes.
  void startupSilenceIsBoundedByStallS() {
    auto r = cli(train("silent", home_.filePath("box/run-silent")) + QStringList{"--stall-s", "3"});
    QVERIFY2(r.code == 1, r.err.constData());
    QVERIFY2(QJsonDocument::fromJson(r.out).object().value("status").toString() == "stalled",
             (r.out + "\n" + r.err).constData());
    QVERIFY2(r.err.contains("stalled"), r.err.constData());
  }

  // A stalled run must be killed to stop the meter. When the link drops as the kill goes out,
  // the kill is retried after a reconnect; when it never gets through, the command still says
  // how the run ended, that it may still be running and where, and the run's record says why.
  void aKillLostOnADroppedLinkIsRetried() {
    const QString wd = home_.filePath("box/run-drop-once");
    auto r = cli(train("silent_drop_kill_once", wd) + QStringList{"--stall-s", "3"});
    const auto cleanup = killsGroupAtEnd(pidIn(wd + "/pid"));  // if the kill failed after all
    QVERIFY2(r.code == 1, (r.out + "\n" + r.err).constData());
    QVERIFY2(!QFile::exists(wd + "/drop-kill-once"), "the kill never went out");  // the stand-in dropped one
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("stalled"));
    QVERIFY2(!res.contains("kill_error"), r.out.constData());
    QVERIFY2(!r.err.contains("could not stop the run"), r.err.constData());
    const QString why = runReason(res.value("run_id").toInteger());
    QVERIFY2(why.contains("killed to stop the meter"), qPrintable(why));
    QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(pidIn(wd + "/child_pid")), 0) != 0, 30000);  // killed on the box
  }

  void aKillThatNeverGetsThroughIsReported() {
    const QString wd = home_.filePath("box/run-drop");
    auto r = cli(train("silent_drop_kill", wd) + QStringList{"--stall-s", "3"});
    const qint64 child = pidIn(wd + "/child_pid");
    const auto cleanup = killsGroupAtEnd(pidIn(wd + "/pid"));
    QVERIFY2(r.code == 1, (r.out + "\n" + r.err).constData());
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("stalled"));
    QVERIFY2(!res.value("kill_error").toString().isEmpty(), r.out.constData());
    QVERIFY2(r.err.contains("could not stop the run on the box") && r.err.contains(wd.toUtf8()), r.err.constData());
    const QString why = runReason(res.value("run_id").toInteger());
    QVERIFY2(why.contains("could not be killed"), qPrintable(why));
    QVERIFY(child > 0);
    QCOMPARE(::kill(pid_t(child), 0), 0);  // still running, as the command said
  }

  // The issue's reproduction of the lab's friction item 5: a stand-in logs three steps and
  // then stays alive printing a warning every half second (a hung NCCL collective, a stuck
  // data loader). Output is not progress: the watchdog calls it stalled, names the last
  // step and lines, and kills it so the meter stops (the command returns, exit 1).
  void chattyRunWithoutNewStepsIsStalled() {
    const QString wd = home_.filePath("box/run-chatty");
    auto r = cli(train("chatty", wd) + QStringList{"--stall-s", "10"});
    QCOMPARE(r.code, 1);
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("stalled"));
    const QString why = res.value("reason").toString();
    QVERIFY2(why.contains("no new step") && why.contains("last step 3 of 10"), qPrintable(why));
    QVERIFY2(why.contains("waiting for the collective"), qPrintable(why));
    QVERIFY(res.value("cost_while_dead_usd").toDouble() >= 0);
    QFile pidFile(wd + "/child_pid");
    QVERIFY(pidFile.open(QIODevice::ReadOnly));
    const qint64 pid = pidFile.readAll().trimmed().toLongLong();
    QVERIFY(pid > 0);
    QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(pid), 0) != 0, 30000);  // killed on the box
  }

  void rocmOomIsReportedAndExitsOne() {
    auto r = cli(train("oom_rocm", home_.filePath("box/run-oom")));
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("GPU out of memory (ROCm)"), r.err.constData());
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("status").toString(), QString("failed"));
  }

  void dryRunShowsZero3OffloadFilesAndCommand() {
    const QString rf = recipe("r70.json", R"({"model": "/models/llama-70b", "deepspeed": "z3_offload", "gpus": 2})");
    auto r = cli({"remote", "train", "--box", "loop", "--engine", "llamafactory", "--recipe", rf, "--data",
                  home_.filePath("data.json"), "--dry-run"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("ds_z3_offload_config.json"));
    QVERIFY(r.out.contains("train.yaml"));
    QVERIFY(r.out.contains("data/dataset_info.json"));
    QVERIFY(r.out.contains("FORCE_TORCHRUN=1 llamafactory-cli train train.yaml"));
    // The files' contents, not only their names; the training set is named, not dumped.
    QVERIFY2(r.out.contains("--- train.yaml\n") && r.out.contains("finetuning_type: lora"), r.out.constData());
    QVERIFY2(r.out.contains("\"stage\": 3"), r.out.constData());  // the DeepSpeed ZeRO-3 JSON
    QVERIFY2(r.out.contains("(a copy of " + home_.filePath("data.json").toUtf8()), r.out.constData());
    r = cli({"remote", "train", "--box", "loop", "--engine", "llamafactory", "--recipe", rf, "--data",
             home_.filePath("data.json"), "--dry-run", "--json"});
    QCOMPARE(r.code, 0);
    const auto j = QJsonDocument::fromJson(r.out).object();
    QVERIFY(j.value("command").toString().contains("llamafactory-cli train train.yaml"));
    QVERIFY(j.value("files").toObject().value("train.yaml").toString().contains("lora_rank:"));
  }

  // Without --json: one line that says how it ended ("finished: finished" before).
  void finishedRunSaysWhereItEnded() {
    QStringList args = train("ok", home_.filePath("box/run-ok-text"));
    args.removeLast();  // --json
    const auto r = cli(args);
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(r.out, QByteArray("finished at step 3/3\n"));
  }

  void plantedTokenInTheDataIsRefused() {
    writeFile(home_.filePath("leaky.json"), R"([{"instruction": "hf_PLANTEDtokenPLANTEDtokenPLANTED1234", "output": "a"}])");
    const QString wd = home_.filePath("box/run-leak");
    auto r = cli({"remote", "train", "--box", "loop", "--engine", "llamafactory", "--recipe",
                  recipe("r.json", R"({"model": "/m"})"), "--data", home_.filePath("leaky.json"), "--workdir", wd});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("HF_TOKEN"));
    QVERIFY(!QFile::exists(wd));  // nothing left this machine
  }

  void serveWaitsForHealthThroughTheTunnel() {
    const int port = freeLoopbackPort();
    QProcess p;
    crosslab::testing::CliOptions o;
    o.env.insert("CROSSLAB_HOME", home_.path());
    crosslab::testing::startCli(p, {"remote", "serve", "--box", "loop", "--engine", "vllm", "--model", "/m", "--port",
                           QString::number(port), "--launcher",
                           QString(SERVE_STANDIN) + " --port " + QString::number(port) + " --unhealthy 2", "--workdir",
                           home_.filePath("box/serve"), "--for", "60", "--stop-on-exit"},
                                o);
    QVERIFY(p.waitForReadyRead(60000));
    const auto info = QJsonDocument::fromJson(p.readLine()).object();
    const QString url = info.value("url").toString();
    QVERIFY2(url.startsWith("http://127.0.0.1:"), qPrintable(url));
    QVERIFY(info.value("local_port").toInt() != port);  // reached through the tunnel, not directly
    httplib::Client client("127.0.0.1", info.value("local_port").toInt());
    auto models = client.Get("/v1/models");
    QVERIFY(models);
    QCOMPARE(models->status, 200);
    QCOMPARE(QJsonDocument::fromJson(QByteArray::fromStdString(models->body)).object().value("object").toString(), QString("list"));
    p.terminate();
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
  }

  void serveReadsAdapterRankOnTheBoxAndFailsFastWhenTheServerDies() {
    writeFile(home_.filePath("box/adapter64/adapter_config.json"), R"({"r": 64, "lora_alpha": 128, "peft_type": "LORA"})");
    auto r = cli({"remote", "serve", "--box", "loop", "--engine", "vllm", "--model", "/m", "--adapters",
                  "tuned=" + home_.filePath("box/adapter64"), "--port", QString::number(freeLoopbackPort()),
                  "--workdir", home_.filePath("box/serve-dies"), "--health-timeout", "60"});
    QCOMPARE(r.code, 1);  // no vllm on this machine: the server exits and we say so
    QVERIFY2(r.err.contains("--enable-lora --max-lora-rank 64"), r.err.constData());
    QVERIFY(r.err.contains("never answered /health"));
  }

  void rayAcrossBoxesIsShownBeforeItRuns() {
    QCOMPARE(cli({"box", "add", "spark2", "--host", "10.0.0.2", "--user", "me"}).code, 0);
    auto r = cli({"remote", "serve", "--box", "loop", "--engine", "vllm", "--model", "/m", "--tp", "2", "--workers",
                  "spark2", "--head-ip", "10.0.0.1", "--enforce-eager", "--dry-run"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], QByteArray("loop: ray start --head --node-ip-address=10.0.0.1 --port=6379"));
    QCOMPARE(lines[1], QByteArray("spark2: ray start --address=10.0.0.1:6379"));
    QVERIFY(lines[2].contains("--tensor-parallel-size 2 --distributed-executor-backend ray"));
    QVERIFY(lines[2].contains("--enforce-eager"));
    QCOMPARE(cli({"remote", "serve", "--box", "loop", "--engine", "vllm", "--model", "/m", "--workers", "nobox",
                  "--dry-run"}).code, 1);
  }

  void preflightBlocksAnIncompleteModel() {
    const QString m = home_.filePath("model");
    writeFile(m + "/config.json", R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000})");
    writeFile(m + "/tokenizer_config.json", "{}");
    writeFile(m + "/model.safetensors.index.json", R"({"weight_map": {"w": "model-00001-of-00001.safetensors"}})");
    auto r = cli({"preflight", "--model", m, "--json"});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("preflight blocked"));
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("blocked").toBool(), true);
  }

  void preflightProvenanceOverrideAndFitOnTheBox() {
    const QString m = home_.filePath("model");
    writeFile(m + "/tokenizer.json", "{}");
    QByteArray st(8, '\0');
    const QByteArray header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    st[0] = static_cast<char>(header.size());
    writeFile(m + "/model-00001-of-00001.safetensors", st + header + QByteArray(8, '\1'));
    writeFile(home_.filePath("ref.sha256"), QByteArray(64, 'a') + "  config.json\n");
    auto r = cli({"preflight", "--model", m, "--hashes", home_.filePath("ref.sha256")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("provenance"));
    r = cli({"preflight", "--model", m, "--hashes", home_.filePath("ref.sha256"), "--allow-mismatch", "--recipe",
             recipe("small.json", R"({"model": "/m", "cutoff_len": 128})"), "--box", "loop", "--gpu-memory-gb", "24",
             "--lab", home_.filePath("home"), "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto findings = QJsonDocument::fromJson(r.out).object().value("findings").toArray();
    int fit = 0, disk = 0;
    for (const auto& f : findings) {
      fit += f.toObject().value("check").toString() == "fit";
      disk += f.toObject().value("check").toString() == "disk";
    }
    QCOMPARE(fit, 3);  // ZeRO-0, ZeRO-3, ZeRO-3 + offload
    QCOMPARE(disk, 1);
  }
};

QTEST_GUILESS_MAIN(TestRemoteCli)
#include "test_remote_cli.moc"
