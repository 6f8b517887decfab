// SshSession and PortForward against a real OpenSSH server on a loopback port.
#include <QFile>
#include <QRandomGenerator>
#include <QtTest>

#include <atomic>
#include <filesystem>

#include "backends/ssh/port_forward.h"
#include "backends/ssh/ssh_session.h"
#include "http_standin.h"
#include "loopback_target.h"

using crosslab::ssh::HostKeyError;
using crosslab::ssh::PortForward;
using crosslab::ssh::SshError;
using crosslab::ssh::SshSession;
using crosslab::ssh::SshTarget;

class TestSsh : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  QTemporaryDir work_;

  SshTarget target(bool acceptNew = true) const { return loopbackTarget(sshd_, acceptNew); }

  QByteArray randomBytes(int n) {
    QByteArray b(n, '\0');
    for (int i = 0; i < n; ++i) b[i] = static_cast<char>(QRandomGenerator::global()->bounded(256));
    return b;
  }

  static QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }

  static void writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(data);
  }

 private slots:
  void initTestCase() {
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
  }

  void unknownHostIsRefusedWithoutAcceptNew() {
    SshSession s(target(false));
    bool refused = false;
    try {
      s.connect();
    } catch (const HostKeyError& e) {
      refused = QString(e.what()).contains("unknown host key");
    }
    QVERIFY(refused);
    QVERIFY(!QFile::exists(sshd_.knownHosts()));
  }

  void acceptNewRecordsTheKeyThenItIsKnown() {
    {
      SshSession s(target(true));
      s.connect();
      QVERIFY(s.isConnected());
      QVERIFY(QString::fromStdString(s.hostKeyFingerprint()).contains("SHA256:"));
    }
    const QByteArray kh = readFile(sshd_.knownHosts());
    QVERIFY(kh.contains(QString("[127.0.0.1]:%1").arg(sshd_.port()).toUtf8()));
    SshSession again(target(false));
    again.connect();  // no throw: the key is known now
    QVERIFY(again.keepalive());
  }

  // An encrypted key file: the passphrase is asked through the target's callback; a
  // wrong one, none, or an asker that cannot ask each fail with a clear message.
  void encryptedKeyAsksForItsPassphrase() {
    QString why;
    const QString key = sshd_.addEncryptedUserKey("correct horse", &why);
    QVERIFY2(!key.isEmpty(), qPrintable(why));
    QVERIFY(crosslab::ssh::keyIsEncrypted(key.toStdString()));
    QVERIFY(!crosslab::ssh::keyIsEncrypted(sshd_.userKey().toStdString()));
    SshTarget t = target();
    t.keyFile = key.toStdString();
    int asked = 0;
    t.askPassphrase = [&asked](const std::string&) {
      ++asked;
      return std::string("correct horse");
    };
    {
      SshSession s(t);
      s.connect();
      QCOMPARE(s.run("echo unlocked").out, std::string("unlocked\n"));
    }
    QCOMPARE(asked, 1);
    t.askPassphrase = [](const std::string&) { return std::string("wrong horse"); };
    auto failure = [&t]() -> QString {
      try {
        SshSession s(t);
        s.connect();
      } catch (const crosslab::ssh::SshError& e) {
        return e.what();
      }
      return "connected";
    };
    QCOMPARE(failure(), "wrong passphrase for key " + key);
    t.askPassphrase = nullptr;
    QVERIFY2(failure().contains("is encrypted and nothing can ask for its passphrase"), qPrintable(failure()));
    t.askPassphrase = [](const std::string&) -> std::string { throw std::runtime_error("no terminal here"); };
    QCOMPARE(failure(), "key " + key + " is encrypted: no terminal here");
    t.keyFile = work_.filePath("no-such-key").toStdString();
    QCOMPARE(failure(), "no private key at " + work_.filePath("no-such-key"));
  }

  void wrongUserKeyIsRejected() {
    SshTarget t = target(true);
    const QString other = work_.filePath("other_key");
    QProcess::execute("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-f", other});
    t.keyFile = other.toStdString();
    SshSession s(t);
    bool rejected = false;
    try {
      s.connect();
    } catch (const HostKeyError&) {
    } catch (const SshError& e) {
      rejected = QString(e.what()).contains("authentication failed");
    }
    QVERIFY(rejected);
  }

  void execReturnsStatusAndSeparatesStreams() {
    SshSession s(target());
    const auto r = s.run("echo out; echo err 1>&2; exit 7");
    QCOMPARE(r.status, 7);
    QCOMPARE(QByteArray::fromStdString(r.out), QByteArray("out\n"));
    QCOMPARE(QByteArray::fromStdString(r.err), QByteArray("err\n"));
  }

  void execStreamsOutputBeforeTheCommandEnds() {
    // The command waits for a file the test creates only after it has seen "first":
    // without streaming this would never finish (the timeout makes it exit 9 instead).
    const QString flag = work_.filePath("flag");
    SshSession s(target());
    std::string seen;
    const int status = s.exec(
        "echo first; for i in $(seq 200); do [ -f " + flag.toStdString() + " ] && { echo second; exit 0; }; sleep 0.05; done; exit 9",
        [&](const char* d, std::size_t n) {
          seen.append(d, n);
          if (seen.find("first") != std::string::npos) writeFile(flag, "x");
        },
        {});
    QCOMPARE(status, 0);
    QCOMPARE(QByteArray::fromStdString(seen), QByteArray("first\nsecond\n"));
  }

  void uploadAndDownloadRoundTripWithProgress() {
    const QByteArray data = randomBytes(300 * 1024 + 17);
    const QString src = work_.filePath("up.bin"), remote = work_.filePath("remote.bin"),
                  back = work_.filePath("back.bin");
    writeFile(src, data);
    SshSession s(target());
    std::uint64_t last = 0, total = 0;
    s.upload(src.toStdString(), remote.toStdString(), [&](std::uint64_t d, std::uint64_t t) { last = d; total = t; });
    QCOMPARE(total, static_cast<std::uint64_t>(data.size()));
    QCOMPARE(last, total);
    QVERIFY(!QFile::exists(remote + ".part"));
    s.download(remote.toStdString(), back.toStdString());
    QCOMPARE(readFile(back), data);
  }

  void uploadResumesFromPartialFile() {
    const QByteArray data = randomBytes(200 * 1024);
    const QString src = work_.filePath("resume.bin"), remote = work_.filePath("resume_remote.bin");
    writeFile(src, data);
    writeFile(remote + ".part", data.left(100000));  // what a broken transfer left behind
    SshSession s(target());
    std::uint64_t first = UINT64_MAX;
    s.upload(src.toStdString(), remote.toStdString(), [&](std::uint64_t d, std::uint64_t) {
      if (first == UINT64_MAX) first = d;
    });
    QCOMPARE(first, std::uint64_t{100000});
    QCOMPARE(readFile(remote), data);
  }

  void downloadResumesFromPartialFile() {
    const QByteArray data = randomBytes(150 * 1024);
    const QString remote = work_.filePath("dl_remote.bin"), local = work_.filePath("dl_local.bin");
    writeFile(remote, data);
    writeFile(local + ".part", data.left(70000));
    SshSession s(target());
    std::uint64_t first = UINT64_MAX;
    s.download(remote.toStdString(), local.toStdString(), [&](std::uint64_t d, std::uint64_t) {
      if (first == UINT64_MAX) first = d;
    });
    QCOMPARE(first, std::uint64_t{70000});
    QCOMPARE(readFile(local), data);
  }

  void cancelledUploadLeavesNoFileUnderTheRealName() {
    const QString src = work_.filePath("cancel.bin"), remote = work_.filePath("cancel_remote.bin");
    writeFile(src, randomBytes(256 * 1024));
    SshSession s(target());
    std::atomic<bool> cancel{false};
    bool threw = false;
    try {
      s.upload(src.toStdString(), remote.toStdString(), [&](std::uint64_t d, std::uint64_t) { if (d > 0) cancel = true; },
               true, &cancel);
    } catch (const SshError&) {
      threw = true;
    }
    QVERIFY(threw);
    QVERIFY(!QFile::exists(remote));
    QVERIFY(QFile::exists(remote + ".part"));
  }

  void missingRemoteFileIsAClearError() {
    SshSession s(target());
    bool clear = false;
    try {
      s.download(work_.filePath("nope.bin").toStdString(), work_.filePath("nope_local").toStdString());
    } catch (const SshError& e) {
      clear = QString(e.what()).contains("no such file");
    }
    QVERIFY(clear);
  }

  void reconnectsAfterTheConnectionDrops() {
    SshSession s(target());
    QCOMPARE(s.run("echo one").out, std::string("one\n"));
    // Kill the sshd process serving this connection: the link is gone.
    try {
      s.run("kill -9 $PPID");
    } catch (const SshError&) {
    }
    QCOMPARE(s.run("echo two").out, std::string("two\n"));
  }

  void portForwardReachesALoopbackServerOnTheBox() {
    HttpStandin http;
    http.server().Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    const int remotePort = http.start();
    QVERIFY(remotePort > 0);
    PortForward fwd(target(), 0, "127.0.0.1", remotePort);
    const int local = fwd.start();
    QVERIFY(local > 0 && local != remotePort);
    httplib::Client client("127.0.0.1", local);
    client.set_read_timeout(20, 0);
    for (int i = 0; i < 3; ++i) {
      auto res = client.Get("/health");
      QVERIFY(res);
      QCOMPARE(res->status, 200);
      QCOMPARE(QByteArray::fromStdString(res->body), QByteArray("ok"));
    }
    QVERIFY(fwd.connectionsServed() >= 1);
    fwd.stop();
  }

  void changedHostKeyIsRefusedEvenWithAcceptNew() {
    QVERIFY(QFile::exists(sshd_.knownHosts()));
    QString why;
    QVERIFY2(sshd_.regenerateHostKey(&why), qPrintable(why));
    SshSession s(target(true));
    bool refused = false;
    try {
      s.connect();
    } catch (const HostKeyError& e) {
      refused = QString(e.what()).contains("CHANGED");
    }
    QVERIFY(refused);
  }
};

QTEST_GUILESS_MAIN(TestSsh)
#include "test_ssh.moc"
