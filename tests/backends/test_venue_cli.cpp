// crosslab-cli venues/box as a user runs them: a real child process against the Hot
// Aisle stand-in and a real sshd on loopback.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFile>
#include <QDirIterator>
#include <QTemporaryDir>
#include <QtTest>

#include "hotaisle_standin.h"
#include "sshd_fixture.h"
#include "tests/support/cli_runner.h"

#include <fcntl.h>
#include <unistd.h>

namespace {

using Result = crosslab::testing::CliResult;

const char* kPlantedToken = "hf_PLANTEDtokenPLANTEDtokenPLANTED1234";

}  // namespace

class TestVenueCli : public QObject {
  Q_OBJECT
  QTemporaryDir home_;
  HotAisleStandin hotaisle_;
  SshdFixture sshd_;

  QProcessEnvironment env(const QString& apiKey = HotAisleStandin::kKey) {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("CROSSLAB_HOME", home_.path());
    e.insert("HOTAISLE_API_KEY", apiKey);
    e.insert("HF_TOKEN", kPlantedToken);  // a secret that must never leave this machine
    e.remove("SSH_AUTH_SOCK");
    return e;
  }

  Result cli(const QStringList& args, const QString& apiKey = HotAisleStandin::kKey) {
    return crosslab::testing::runCli(args, env(apiKey));
  }

  QStringList provider() const {
    return {"--provider", "hotaisle", "--api-url", QString::fromStdString(hotaisle_.baseUrl()), "--team", "lab"};
  }

  QStringList known() const { return {"--known-hosts", sshd_.knownHosts()}; }

 private slots:
  void initTestCase() {
    QVERIFY(hotaisle_.start() > 0);
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
  }

  void offersAsJsonSortedByGpuHour() {
    auto r = cli(QStringList{"venues", "offers"} + provider() + QStringList{"--json"});
    QCOMPARE(r.code, 0);
    const auto arr = QJsonDocument::fromJson(r.out).array();
    QCOMPARE(arr.size(), 2);
    for (const char* key : {"gpu_model", "gpu_count", "vcpus", "ram_gb", "disk_gb", "price_per_hour", "min_minutes"})
      QVERIFY2(arr[0].toObject().contains(key), key);
    QCOMPARE(arr[0].toObject().value("price_per_hour").toDouble(), 2.99);  // 1x: $2.99/GPU-h
    QCOMPARE(arr[0].toObject().value("min_minutes").toInt(), 1);
    QCOMPARE(arr[1].toObject().value("gpu_count").toInt(), 2);
    QCOMPARE(arr[1].toObject().value("min_minutes").toInt(), 60);
  }

  void offersAreALiveLadderProbeAndManualRungsJoinThem() {
    QCOMPARE(cli(QStringList{"venues", "offers"} + provider()).code, 0);
    auto r = cli({"venues", "ladder", "set", "azure/eastus/MI300X", "--availability", "no_quota", "--price", "48",
                  "--spot", "8.87", "--quota", "MI300X family 0; spot 3 vCPU", "--at", "2026-01-01T00:00:00Z"});
    QCOMPARE(r.code, 0);
    QCOMPARE(cli({"venues", "ladder", "set", "x", "--availability", "maybe"}).code, 2);
    r = cli({"venues", "ladder", "--json"});
    QCOMPARE(r.code, 0);
    QJsonObject hot, azure;
    for (const auto& v : QJsonDocument::fromJson(r.out).array()) {
      if (v.toObject().value("venue").toString() == "hotaisle") hot = v.toObject();
      if (v.toObject().value("venue").toString() == "azure/eastus/MI300X") azure = v.toObject();
    }
    QCOMPARE(hot.value("availability").toString(), QString("available"));
    QCOMPARE(hot.value("accelerator").toString(), QString("MI300X"));
    QCOMPARE(hot.value("price_per_hour").toDouble(), 2.99);
    QVERIFY(!hot.value("probed_at").toString().isEmpty());
    QCOMPARE(azure.value("availability").toString(), QString("no_quota"));
    QCOMPARE(azure.value("spot_price_per_hour").toDouble(), 8.87);
    QVERIFY(azure.value("quota").toString().contains("family 0"));

    QCOMPARE(cli({"venues", "timeline", "hotaisle", "--add", "account created", "--at", "2026-01-01T00:45:14Z"}).code, 0);
    QCOMPARE(cli({"venues", "timeline", "hotaisle", "--add", "key minted", "--at", "2026-01-01T22:30:00Z"}).code, 0);
    QCOMPARE(cli({"venues", "timeline", "hotaisle", "--add", "first token", "--at", "2026-01-01T22:47:00Z"}).code, 0);
    r = cli({"venues", "timeline", "hotaisle", "--json"});
    const auto t = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(t.value("milestones").toArray().size(), 3);
    QCOMPARE(t.value("active_s").toDouble(), 17 * 60.0);
    QCOMPARE(cli({"venues", "timeline", "hotaisle", "--add", "x", "--at", "tuesday"}).code, 2);  // checked first
  }

  void missingKeyNamesEveryPlaceToPutIt() {
    auto e = env();
    e.remove("HOTAISLE_API_KEY");
    e.remove("DBUS_SESSION_BUS_ADDRESS");  // no keyring service in this process either
    const auto noKey = crosslab::testing::runCli(QStringList{"venues", "offers"} + provider(), e);
    QCOMPARE(noKey.code, 1);
    const QByteArray err = noKey.err;
    QVERIFY2(err.contains("HOTAISLE_API_KEY") && err.contains("secrets set hotaisle-api-key"), err.constData());
    QVERIFY2(!err.contains("Unknown error"), err.constData());  // the keyring's reason says something or nothing
    auto r = cli(QStringList{"venues", "offers", "--api-key-env", "CROSSLAB_NO_SUCH_VAR"} + provider());
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("CROSSLAB_NO_SUCH_VAR is not set"));
    // empty stdin (the runner always closes it): nothing to store
    QCOMPARE(crosslab::testing::runCli({"secrets", "set", "hf-token"}, e).code, 1);
  }

  void rejectedKeyExitsOneAndSaysSo() {
    auto r = cli(QStringList{"venues", "offers"} + provider(), "not-the-key-123456");
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("rejected the API key"));
    QCOMPARE(r.err.trimmed().count('\n'), 0);
    QVERIFY(!r.err.contains("not-the-key"));
  }

  void provisionStateListDelete() {
    auto r = cli(QStringList{"venues", "provision"} + provider() + QStringList{"--offer", "0", "--poll-ms", "10", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto vm = QJsonDocument::fromJson(r.out).object();
    const QString name = vm.value("name").toString();
    QVERIFY(!name.isEmpty());
    QCOMPARE(vm.value("ip_address").toString(), QString("127.0.0.1"));
    QCOMPARE(vm.value("state").toString(), QString("running"));

    r = cli({"venues", "list", "--json"});
    QCOMPARE(r.code, 0);
    const auto boxes = QJsonDocument::fromJson(r.out).array();
    QCOMPARE(boxes.size(), 1);
    const auto box = boxes[0].toObject();
    QCOMPARE(box.value("state").toString(), QString("running"));
    QCOMPARE(box.value("price_per_hour").toDouble(), 2.99);
    QVERIFY(box.value("cost_usd").toDouble() >= 2.99 / 60 - 1e-9);  // the 1-minute minimum is billed

    r = cli(QStringList{"venues", "state", name} + provider());
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("running"));

    r = cli(QStringList{"venues", "delete", name} + provider() + QStringList{"--json"});
    QCOMPARE(r.code, 0);
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("already_gone").toBool(), false);
    r = cli(QStringList{"venues", "delete", name} + provider());
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("already gone"));

    r = cli({"venues", "list", "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).array().size(), 0);
    // The life is booked once, by the ledger's derivation: one life, its billed minimum.
    r = cli({"ledger", "--json"});
    QCOMPARE(r.code, 0);
    const auto lives = QJsonDocument::fromJson(r.out).object().value("lives").toArray();
    QCOMPARE(lives.size(), 1);
    QVERIFY(lives[0].toObject().value("billed_usd").toDouble() >= 2.99 / 60 - 1e-6);  // JSON: 6 decimals
  }

  void aRentAnswered500IsSentOnceAndTheVmItLeftIsRecorded() {
    const int posts = hotaisle_.provisionPosts();
    hotaisle_.failProvisionAfterCreate(500);
    auto r = cli(QStringList{"venues", "provision"} + provider() + QStringList{"--offer", "0", "--poll-ms", "10"});
    QCOMPARE(r.code, 1);
    QCOMPARE(hotaisle_.provisionPosts() - posts, 1);
    QVERIFY2(r.err.contains("HTTP 500") && r.err.contains("not repeated") && r.err.contains("recorded as box lives"),
             r.err.constData());
    QCOMPARE(r.err.trimmed().count('\n'), 0);  // one line
    r = cli({"venues", "list", "--json"});
    const auto boxes = QJsonDocument::fromJson(r.out).array();
    QCOMPARE(boxes.size(), 1);
    const QString name = boxes[0].toObject().value("name").toString();
    QVERIFY2(r.out.contains("2.99"), r.out.constData());
    // Deleted once from here (its record knows where), booked once.
    r = cli({"venues", "delete", name, "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("booked_now").toBool(), true);
    r = cli({"venues", "list", "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).array().size(), 0);
  }

  void timelineImportIsAllOrNothing() {
    QTemporaryDir d;
    QFile good(d.filePath("t.jsonl")), bad(d.filePath("bad.txt"));
    QVERIFY(good.open(QIODevice::WriteOnly) && bad.open(QIODevice::WriteOnly));
    good.write("{\"milestone\": \"account created\", \"at\": \"2026-02-01T00:45:14Z\"}\n"
               "2026-02-01T22:30:00Z key minted\n");
    bad.write("2026-02-01T22:39:40Z provision request\nlater first token\n");
    good.close();
    bad.close();
    auto r = cli({"venues", "timeline", "imported-venue", "--import", bad.fileName()});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("line 2") && r.err.contains("nothing imported"), r.err.constData());
    r = cli({"venues", "timeline", "imported-venue", "--import", good.fileName(), "--json"});
    QCOMPARE(r.code, 0);
    const auto t = QJsonDocument::fromJson(r.out).object().value("milestones").toArray();
    QCOMPARE(t.size(), 2);
    QCOMPARE(t[1].toObject().value("source").toString(), QString("imported"));
    // The lab's own database is refused by name, never opened (issue #11: a stray open+close
    // would drop this process's locks on it).
    QDirIterator it(home_.path(), {"lab.sqlite"}, QDir::Files, QDirIterator::Subdirectories);
    QVERIFY(it.hasNext());
    const QString db = it.next();
    r = cli({"venues", "timeline", "imported-venue", "--import", db});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("only SQLite opens it"), r.err.constData());
    r = cli({"venues", "timeline", "imported-venue", "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("milestones").toArray().size(), 2);
  }

  void provisionWithUnknownGpuFails() {
    auto r = cli(QStringList{"venues", "provision"} + provider() + QStringList{"--gpu", "H100", "--gpus", "8"});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("no offer"));
  }

  void boxAddThenHostKeyPolicy() {
    auto r = cli({"box", "add", "loop", "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                  sshd_.user(), "--key", sshd_.userKey()});
    QCOMPARE(r.code, 0);
    r = cli({"box", "list", "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).array().size(), 1);

    r = cli(QStringList{"box", "exec", "loop"} + known() + QStringList{"--", "echo", "hi"});
    QCOMPARE(r.code, 1);  // unknown host key, no --accept-new
    QVERIFY(r.err.contains("unknown host key"));

    r = cli(QStringList{"box", "exec", "loop", "--accept-new"} + known() + QStringList{"--", "echo hi; echo oops >&2; exit 3"});
    QCOMPARE(r.code, 3);
    QCOMPARE(r.out, QByteArray("hi\n"));
    QCOMPARE(r.err, QByteArray("oops\n"));

    r = cli(QStringList{"box", "exec", "loop"} + known() + QStringList{"--", "true"});
    QCOMPARE(r.code, 0);  // known now
  }

  // `box exec` with an encrypted key: the passphrase comes from the descriptor named by
  // CROSSLAB_SSH_PASSPHRASE_FD; with no terminal and no descriptor it fails clearly.
  void encryptedKeyPassphraseFromADescriptorOrAClearError() {
    QString why;
    const QString key = sshd_.addEncryptedUserKey("s3same open", &why);
    QVERIFY2(!key.isEmpty(), qPrintable(why));
    QCOMPARE(cli({"box", "add", "locked", "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                  sshd_.user(), "--key", key})
                 .code,
             0);
    auto exec = [&](const QByteArray& stdinText, bool fromFd, const QString& fd = "0") -> Result {
      crosslab::testing::CliOptions o;
      o.env = env();
      if (fromFd) o.env.insert("CROSSLAB_SSH_PASSPHRASE_FD", fd);
      o.newSession = true;  // no controlling terminal, as under CI or cron
      o.input = stdinText;
      return crosslab::testing::runCli(
          QStringList{"box", "exec", "locked", "--accept-new"} + known() + QStringList{"--", "echo", "opened"}, o);
    };
    auto r = exec("s3same open\n", true);
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(r.out, QByteArray("opened\n"));
    r = exec("s3same shut\n", true);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(("wrong passphrase for key " + key).toUtf8()), r.err.constData());
    r = exec("s3same open\n", false);  // a passphrase on stdin is not read unless asked for
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("no terminal to ask for its passphrase"), r.err.constData());
    QVERIFY(!r.err.contains("s3same"));
    // A descriptor the caller did not hand over is never read: by the time a passphrase is
    // asked for, crosslab has opened descriptors of its own (lab.sqlite among them), and
    // reading or closing one of those drops SQLite's locks. Those not open here are not
    // inherited by the child, whatever it opens at those numbers.
    int refused = 0;
    for (int fd = 3; fd < 16 && refused < 4; ++fd) {
      if (fcntl(fd, F_GETFD) != -1) continue;  // open in this process: the child might inherit it
      r = exec("s3same open\n", true, QString::number(fd));
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.contains("not open at start-up"), r.err.constData());
      QVERIFY2(!r.err.contains("longer than"), r.err.constData());
      ++refused;
    }
    QVERIFY(refused > 0);
    r = exec("s3same open\n", true, "x1");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("not a descriptor number"), r.err.constData());
    // The lab those commands had open is intact and still usable.
    r = cli({"box", "list", "--json"});
    QCOMPARE(r.code, 0);
    QVERIFY(QJsonDocument::fromJson(r.out).isArray() || QJsonDocument::fromJson(r.out).isObject());
  }

  void changedHostKeyIsRefusedEvenWithAcceptNew() {
    // A known_hosts that remembers a different key for this host:port.
    const QString other = home_.filePath("other_host");
    QProcess::execute("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-f", other});
    QFile pub(other + ".pub");
    QVERIFY(pub.open(QIODevice::ReadOnly));
    const QByteArray key = pub.readAll().split(' ').mid(0, 2).join(' ');
    QFile kh(home_.filePath("changed_known_hosts"));
    QVERIFY(kh.open(QIODevice::WriteOnly));
    kh.write(QString("[127.0.0.1]:%1 ").arg(sshd_.port()).toUtf8() + key + "\n");
    kh.close();
    auto r = cli({"box", "exec", "loop", "--accept-new", "--known-hosts", kh.fileName(), "--", "true"});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("CHANGED"));
  }

  void pushAndPullRoundTrip() {
    QTemporaryDir d;
    QFile f(d.filePath("data.jsonl"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (int i = 0; i < 2000; ++i) f.write(QString("{\"instruction\": \"q%1\", \"output\": \"a\"}\n").arg(i).toUtf8());
    f.close();
    const QString remote = d.filePath("remote.jsonl"), back = d.filePath("back.jsonl");
    auto r = cli(QStringList{"box", "push", "loop", f.fileName(), remote} + known());
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.err.contains("MB/s"));
    r = cli(QStringList{"box", "pull", "loop", remote, back} + known());
    QCOMPARE(r.code, 0);
    QFile a(f.fileName()), b(back);
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    QCOMPARE(b.readAll(), a.readAll());
    // Progress on a non-terminal: whole lines, never a "\r" line that the next one runs into.
    QVERIFY2(!r.err.contains('\r') && r.err.endsWith('\n'), r.err.constData());

    // A folder goes both ways, nested files included, and no empty .part is left behind.
    QVERIFY(QDir().mkpath(d.filePath("tree/sub")));
    for (const char* name : {"tree/a.txt", "tree/sub/b.txt"}) {
      QFile t(d.filePath(name));
      QVERIFY(t.open(QIODevice::WriteOnly));
      t.write(QByteArray("content of ") + name);
    }
    r = cli(QStringList{"box", "push", "loop", d.filePath("tree"), d.filePath("remote-tree")} + known());
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli(QStringList{"box", "pull", "loop", d.filePath("remote-tree"), d.filePath("tree-back")} + known());
    QVERIFY2(r.code == 0, r.err.constData());
    for (const char* name : {"a.txt", "sub/b.txt"}) {
      QFile t(d.filePath(QString("tree-back/") + name));
      QVERIFY2(t.open(QIODevice::ReadOnly), name);
      QCOMPARE(t.readAll(), QByteArray("content of tree/") + name);
    }
    QVERIFY(!QFile::exists(d.filePath("tree-back.part")));
  }

  void plantedTokenIsCaughtBeforeExecAndPush() {
    auto r = cli(QStringList{"box", "exec", "loop"} + known() + QStringList{"--", "echo", kPlantedToken});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("HF_TOKEN"));
    QVERIFY(!r.err.contains(kPlantedToken));
    QTemporaryDir d;
    QFile f(d.filePath("train.sh"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray("export HF_TOKEN=") + kPlantedToken + "\npython train.py\n");
    f.close();
    const QString remote = d.filePath("remote_train.sh");
    r = cli(QStringList{"box", "push", "loop", d.path(), d.filePath("remote_dir")} + known());
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("HF_TOKEN"));
    QVERIFY(!QFile::exists(d.filePath("remote_dir/train.sh")));
  }

  void forwardCarriesHttpThroughTheTunnel() {
    HttpStandin http;
    http.server().Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    const int remotePort = http.start();
    QProcess p;
    crosslab::testing::CliOptions o;
    o.env = env();
    crosslab::testing::startCli(p, QStringList{"box", "forward", "loop", "0", QString::number(remotePort), "--for", "60"} + known(), o);
    QVERIFY(p.waitForReadyRead(30000));
    const QByteArray line = p.readLine();
    QVERIFY2(line.startsWith("forwarding 127.0.0.1:"), line.constData());
    const int local = line.mid(21).split(' ').first().toInt();
    httplib::Client client("127.0.0.1", local);
    auto res = client.Get("/health");
    QVERIFY(res);
    QCOMPARE(res->status, 200);
    p.terminate();
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardError().contains("1 connection"));
  }

  void usageErrorsExitTwo() {
    QCOMPARE(cli({"box", "exec", "loop"}).code, 2);
    QCOMPARE(cli({"box", "add", "x", "--host", "h"}).code, 2);
    QCOMPARE(cli({"box", "forward", "loop", "port", "80"}).code, 2);
    auto r = cli({"box", "forward", "loop", "0", "80", "--for", "soon"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--for needs a whole number"));
    QCOMPARE(cli({"box", "exec", "nosuchbox", "--", "true"}).code, 1);
  }

  void removeForgetsTheBox() {
    QCOMPARE(cli({"box", "remove", "loop"}).code, 0);
    QCOMPARE(cli({"box", "remove", "loop"}).code, 1);
  }
};

QTEST_GUILESS_MAIN(TestVenueCli)
#include "test_venue_cli.moc"
