// `remote train --engine crosslab` end to end with the REAL engine: a tiny Llama and its
// tokenizer are pushed over SFTP to a real sshd on loopback (the box is this machine),
// the built crosslab-cli trains detached on "the box" for 2 steps, its events.jsonl is
// tailed over SSH into the RunMonitor and the lab, and the adapter comes back by SFTP.
// Then `remote serve --engine crosslab` starts the REAL `crosslab-cli serve` on the box
// with the base model and that adapter (its real flags: --model, --lora), reached through
// the SSH tunnel: a sweep and an eval generation run against the adapter through it, and
// the server is gone from the box when the tunnel closes.
#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <csignal>
#include <cstring>

#include "sshd_fixture.h"
#include "tests/support/cli_runner.h"
#include "tests/model/tiny_llama.h"
#include "tests/train/tiny_tokenizer.h"

namespace {

using Result = crosslab::testing::CliResult;

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The tensor names in a safetensors file's JSON header.
QStringList safetensorNames(const QString& path) {
  const QByteArray bytes = readFile(path);
  if (bytes.size() < 8) return {};
  quint64 n = 0;
  std::memcpy(&n, bytes.constData(), 8);  // little-endian u64 (x86, aarch64)
  if (n > quint64(bytes.size() - 8)) return {};
  const auto header = QJsonDocument::fromJson(bytes.mid(8, int(n))).object();
  QStringList names = header.keys();
  names.removeAll("__metadata__");
  return names;
}

QByteArray sha256(const QString& path) { return QCryptographicHash::hash(readFile(path), QCryptographicHash::Sha256).toHex(); }

}  // namespace

class TestRemoteEngine : public QObject {
  Q_OBJECT
  QTemporaryDir home_;
  SshdFixture sshd_;

  Result cli(const QStringList& args) {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("CROSSLAB_HOME", home_.path());
    e.remove("SSH_AUTH_SOCK");
    return crosslab::testing::runCli(args, e);
  }

 private slots:
  void initTestCase() {
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
    const QString model = home_.filePath("model");
    QVERIFY(QDir().mkpath(model));
    crosslab::testing::writeTinyLlama(model.toStdString(), {});
    crosslab::testing::writeTinyTokenizer(model.toStdString());
    QJsonArray data;
    for (int i = 0; i < 8; ++i)
      data.append(QJsonObject{{"instruction", QString("Where is box %1?").arg(i)},
                              {"input", ""},
                              {"output", QString("Box %1 is in rack %2.").arg(i).arg(i % 3)}});
    QFile f(home_.filePath("data.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(data).toJson());
    f.close();
    auto r = cli({"box", "add", "loop", "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                  sshd_.user(), "--key", sshd_.userKey()});
    QCOMPARE(r.code, 0);
    QCOMPARE(cli({"box", "exec", "loop", "--accept-new", "--", "true"}).code, 0);
  }

  void realEngineTrainsOnTheBoxAndTheAdapterComesBack() {
    // The weights travel like real ones: SFTP into the box's model folder.
    const QString boxModel = home_.filePath("box/models/tiny");
    auto r = cli({"box", "push", "loop", home_.filePath("model"), boxModel});
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(sha256(boxModel + "/model.safetensors"), sha256(home_.filePath("model/model.safetensors")));

    QFile rf(home_.filePath("recipe.json"));
    QVERIFY(rf.open(QIODevice::WriteOnly));
    rf.write(QJsonDocument(QJsonObject{{"model", boxModel},
                                       {"lora_rank", 4},
                                       {"lora_alpha", 8},
                                       {"learning_rate", 1e-2},
                                       {"per_device_train_batch_size", 2},
                                       {"gradient_accumulation_steps", 1},
                                       {"cutoff_len", 128},
                                       {"bf16", false},
                                       {"output_dir", "output"}})
                 .toJson());
    rf.close();
    const QString wd = home_.filePath("box/runs/real"), fetched = home_.filePath("fetched");
    r = cli({"remote", "train", "--box", "loop", "--engine", "crosslab", "--recipe", rf.fileName(), "--data",
             home_.filePath("data.json"), "--launcher", CROSSLAB_CLI, "--max-steps", "2", "--poll-ms", "100",
             "--workdir", wd, "--fetch", fetched, "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto res = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(res.value("status").toString(), QString("finished"));
    QCOMPARE(res.value("last_step").toInt(), 2);
    QCOMPARE(res.value("total_steps").toInt(), 2);
    QVERIFY2(r.err.contains("step 2/2"), r.err.constData());

    // It ran detached on the box: its own events and output are there.
    const QByteArray events = readFile(wd + "/output/events.jsonl");
    QVERIFY2(events.contains("\"event\":\"end\"") || events.contains("\"event\": \"end\""), events.constData());
    QVERIFY(QFile::exists(wd + "/exit_status"));
    QCOMPARE(readFile(wd + "/exit_status").trimmed(), QByteArray("0"));

    // Steps reached the lab through SSH: a run with its two metrics rows.
    r = cli({"lab", "info", home_.filePath("home"), "--json"});
    const auto counts = QJsonDocument::fromJson(r.out).object().value("counts").toObject();
    QCOMPARE(counts.value("runs").toInt(), 1);
    QCOMPARE(counts.value("metrics").toInt(), 2);

    // The adapter came back intact and is a PEFT LoRA adapter.
    const QString local = fetched + "/adapter_model.safetensors", remote = wd + "/output/adapter_model.safetensors";
    QVERIFY(QFile::exists(local));
    QCOMPARE(sha256(local), sha256(remote));
    const QStringList names = safetensorNames(local);
    QCOMPARE(names.size(), 2 * 7 * 2);  // A and B of 7 linear layers in each of 2 blocks
    QVERIFY2(names.contains("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"), qPrintable(names.join(' ')));
    QVERIFY(names.contains("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"));
    const auto cfg = QJsonDocument::fromJson(readFile(fetched + "/adapter_config.json")).object();
    QCOMPARE(cfg.value("r").toInt(), 4);
    QCOMPARE(cfg.value("peft_type").toString(), QString("LORA"));
  }

  void realServeOnTheBoxServesBaseAndAdapterThroughTheTunnel() {
    const QString boxModel = home_.filePath("box/models/tiny"), adapter = home_.filePath("box/runs/real/output");
    QVERIFY2(QFile::exists(adapter + "/adapter_model.safetensors"), "the training test runs first");
    const int port = freeLoopbackPort();
    const QString serveDir = home_.filePath("box/serve");
    QProcess serve;
    crosslab::testing::CliOptions o;
    o.env.insert("CROSSLAB_HOME", home_.path());
    o.env.remove("SSH_AUTH_SOCK");
    crosslab::testing::startCli(serve, {"remote", "serve", "--box", "loop", "--engine", "crosslab", "--model", boxModel,
                                        "--adapters", "tuned=" + adapter, "--program", CROSSLAB_CLI, "--port",
                                        QString::number(port), "--workdir", serveDir, "--health-timeout", "300", "--for",
                                        "600", "--stop-on-exit"},
                                o);
    QVERIFY(serve.waitForReadyRead(300000));
    const auto info = QJsonDocument::fromJson(serve.readLine()).object();
    const QString url = info.value("url").toString();
    QVERIFY2(url.startsWith("http://127.0.0.1:"), qPrintable(url + serve.readAllStandardError()));
    // The generated command is our server's real one.
    QCOMPARE(info.value("command").toString(), QString("%1 serve --model %2 --host 127.0.0.1 --port %3 --lora tuned=%4")
                                                   .arg(CROSSLAB_CLI, boxModel, QString::number(port), adapter));
    QVERIFY(info.value("local_port").toInt() != port);  // through the tunnel

    // A sweep of two levels against the adapter, through the tunnel, recorded with the box.
    auto r = cli({"bench", "--url", url.chopped(3), "--model", "tuned", "--concurrency", "1,2", "--num-prompts", "2",
                  "--output-len", "8", "--lab", home_.filePath("home"), "--box", "loop"});
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli({"lab", "info", home_.filePath("home"), "--json"});
    const auto counts = QJsonDocument::fromJson(r.out).object().value("counts").toObject();
    QCOMPARE(counts.value("benchmark_levels").toInt(), 2);
    // An eval generation against the base model and the adapter, through the same tunnel.
    QFile eval(home_.filePath("eval.jsonl"));
    QVERIFY(eval.open(QIODevice::WriteOnly));
    eval.write(R"({"id": "q1", "question": "Where is box 1?", "contexts": ["Box 1 is in rack 1."]})" "\n");
    eval.close();
    for (const QString& name : {QString("tiny"), QString("tuned")}) {
      r = cli({"eval", "generate", "--eval", eval.fileName(), "--url", url, "--name", name, "--max-tokens", "8", "--out",
               home_.filePath("out-" + name + ".jsonl")});
      QVERIFY2(r.code == 0, r.err.constData());
      const auto line = QJsonDocument::fromJson(readFile(home_.filePath("out-" + name + ".jsonl")).split('\n').first()).object();
      QCOMPARE(line.value("model").toString(), name);
      QVERIFY(line.contains("output"));
    }
    // The tunnel closes (SIGTERM to `remote serve`): --stop-on-exit ends the server on the box.
    const qint64 pid = readFile(serveDir + "/child_pid").trimmed().toLongLong();
    QVERIFY(pid > 0 && ::kill(pid_t(pid), 0) == 0);
    serve.terminate();
    QVERIFY(serve.waitForFinished(120000));
    QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(pid), 0) != 0, 60000);
  }
};

QTEST_GUILESS_MAIN(TestRemoteEngine)
#include "test_remote_engine.moc"
