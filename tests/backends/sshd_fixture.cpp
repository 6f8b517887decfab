#include "sshd_fixture.h"

#include <QDir>
#include <QFile>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>
#include <pwd.h>
#include <unistd.h>

int freeLoopbackPort() {
  QTcpServer s;
  if (!s.listen(QHostAddress::LocalHost, 0)) return 0;
  return s.serverPort();
}

SshdFixture::SshdFixture() = default;
SshdFixture::~SshdFixture() { stop(); }

QString SshdFixture::user() const {
  const passwd* pw = getpwuid(geteuid());
  return pw ? QString::fromLocal8Bit(pw->pw_name) : QString();
}

bool SshdFixture::keygen(const QString& file, QString* why, const QString& passphrase) {
  QFile::remove(file);
  QFile::remove(file + ".pub");
  QProcess p;
  p.start("ssh-keygen", {"-q", "-t", "ed25519", "-N", passphrase, "-f", file});
  if (!p.waitForFinished(20000) || p.exitCode() != 0) {
    *why = "ssh-keygen failed: " + QString::fromLocal8Bit(p.readAllStandardError());
    return false;
  }
  return true;
}

bool SshdFixture::start(QString* why) {
  if (!QFile::exists("/usr/sbin/sshd")) {
    *why = "/usr/sbin/sshd is not installed (packaging/install-deps.sh installs openssh-server)";
    return false;
  }
  if (geteuid() == 0) QDir().mkpath("/run/sshd");  // privilege-separation directory
  if (!keygen(dir_.filePath("host_ed25519"), why) || !keygen(userKey(), why)) return false;
  QFile::copy(userKey() + ".pub", dir_.filePath("authorized_keys"));
  port_ = freeLoopbackPort();
  QFile cfg(dir_.filePath("sshd_config"));
  if (!cfg.open(QIODevice::WriteOnly)) return false;
  const QString d = dir_.path();
  cfg.write(QString("ListenAddress 127.0.0.1\n"
                    "HostKey %1/host_ed25519\n"
                    "PidFile %1/sshd.pid\n"
                    "AuthorizedKeysFile %1/authorized_keys\n"
                    "StrictModes no\n"
                    "PubkeyAuthentication yes\n"
                    "PasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\n"
                    "UsePAM no\n"
                    "PermitRootLogin prohibit-password\n"
                    "AllowTcpForwarding yes\n"
                    "ClientAliveInterval 0\n"
                    "Subsystem sftp internal-sftp\n")
                .arg(d)
                .toUtf8());
  if (!remotePath_.isEmpty())
    cfg.write(QString("SetEnv PATH=%1:/usr/local/bin:/usr/bin:/bin\n").arg(remotePath_).toUtf8());
  cfg.close();
  return launch(why);
}

bool SshdFixture::launch(QString* why) {
  sshd_ = std::make_unique<QProcess>();
  sshd_->setProcessChannelMode(QProcess::MergedChannels);
  sshd_->start("/usr/sbin/sshd", {"-f", dir_.filePath("sshd_config"), "-D", "-e", "-p", QString::number(port_)});
  if (!sshd_->waitForStarted(10000)) {
    *why = "sshd did not start";
    return false;
  }
  // Ready when the port answers with an SSH banner.
  for (int i = 0; i < 200; ++i) {
    QTcpSocket s;
    s.connectToHost("127.0.0.1", static_cast<quint16>(port_));
    if (s.waitForConnected(200) && s.waitForReadyRead(2000) && s.readAll().startsWith("SSH-")) return true;
    if (sshd_->state() == QProcess::NotRunning) break;
    QThread::msleep(50);
  }
  *why = "sshd is not answering: " + QString::fromLocal8Bit(sshd_->readAll());
  return false;
}

void SshdFixture::stop() {
  if (!sshd_) return;
  sshd_->terminate();
  if (!sshd_->waitForFinished(5000)) sshd_->kill();
  sshd_->waitForFinished(2000);
  sshd_.reset();
}

bool SshdFixture::regenerateHostKey(QString* why) {
  stop();
  if (!keygen(dir_.filePath("host_ed25519"), why)) return false;
  return launch(why);
}

QString SshdFixture::addEncryptedUserKey(const QString& passphrase, QString* why) {
  const QString file = dir_.filePath("user_ed25519_encrypted");
  if (!keygen(file, why, passphrase)) return {};
  QFile pub(file + ".pub"), auth(dir_.filePath("authorized_keys"));
  if (!pub.open(QIODevice::ReadOnly) || !auth.open(QIODevice::Append)) {
    *why = "cannot authorize " + file;
    return {};
  }
  auth.write(pub.readAll());  // sshd reads authorized_keys at each login: no restart
  return file;
}
