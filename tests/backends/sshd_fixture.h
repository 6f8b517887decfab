#pragma once
// A real OpenSSH server for tests: generated host and user keys in a temp dir,
// `/usr/sbin/sshd -D -e` on a free 127.0.0.1 port, authorized_keys pointing at the user
// key. The logged-in user is whoever runs the tests.

#include <QProcess>
#include <QString>
#include <QTemporaryDir>
#include <memory>

class SshdFixture {
 public:
  SshdFixture();
  ~SshdFixture();
  // Starts sshd; false and *why when it cannot run here.
  bool start(QString* why);
  void stop();
  int port() const { return port_; }
  QString userKey() const { return dir_.filePath("user_ed25519"); }
  QString hostPublicKey() const { return dir_.filePath("host_ed25519.pub"); }
  QString knownHosts() const { return dir_.filePath("known_hosts"); }
  QString dirPath() const { return dir_.path(); }
  QString user() const;
  // A second user key, encrypted with `passphrase` (ssh-keygen -N), authorized like the
  // first; its path, or empty and *why.
  QString addEncryptedUserKey(const QString& passphrase, QString* why);
  // Directories put in front of PATH for commands run on the box (sshd's SetEnv): stand-ins
  // for programs a GPU box has (rocm-smi, llamafactory-cli, vllm). Call before start().
  void setRemotePath(const QString& dirs) { remotePath_ = dirs; }
  // Replaces the host key (a "rebuilt box") and restarts sshd on the same port.
  bool regenerateHostKey(QString* why);

 private:
  bool keygen(const QString& file, QString* why, const QString& passphrase = QString());
  bool launch(QString* why);
  QTemporaryDir dir_;
  std::unique_ptr<QProcess> sshd_;
  int port_ = 0;
  QString remotePath_;
};

// A free TCP port on 127.0.0.1 (bind to 0, read it, close).
int freeLoopbackPort();
