#include "backends/secrets/keyring.h"

#ifdef CROSSLAB_HAVE_KEYCHAIN
#include <qt6keychain/keychain.h>
#endif

#include <QEventLoop>
#include <QTimer>

namespace crosslab::secrets {
namespace {

constexpr const char* kService = "crosslab";

#ifdef CROSSLAB_HAVE_KEYCHAIN
// qtkeychain's own text, unless it says nothing ("Unknown error").
QString detail(const QString& text) {
  if (text.isEmpty() || text.compare(QStringLiteral("Unknown error"), Qt::CaseInsensitive) == 0) return {};
  return QStringLiteral(" (%1)").arg(text);
}

// Runs a keychain job to completion or timeout on a local event loop.
KeyringReply runJob(QKeychain::Job& job, int timeoutMs) {
  job.setAutoDelete(false);
  job.setInsecureFallback(false);  // never a plaintext file
  QEventLoop loop;
  bool finished = false;
  QObject::connect(&job, &QKeychain::Job::finished, &loop, [&] {
    finished = true;
    loop.quit();
  });
  QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
  job.start();
  if (!finished) loop.exec();
  KeyringReply r;
  if (!finished) r.error = QStringLiteral("the OS keyring did not answer");
  else if (job.error() == QKeychain::EntryNotFound) r.error = QStringLiteral("no such entry in the OS keyring");
  else if (job.error() == QKeychain::NoBackendAvailable || job.error() == QKeychain::OtherError)
    r.error = QStringLiteral("no OS keyring is running here") + detail(job.errorString());
  else if (job.error() != QKeychain::NoError) r.error = QStringLiteral("OS keyring failed") + detail(job.errorString());
  else r.ok = true;
  return r;
}
#endif

}  // namespace

bool keyringCompiledIn() {
#ifdef CROSSLAB_HAVE_KEYCHAIN
  return true;
#else
  return false;
#endif
}

KeyringReply readSecret(const QString& name, int timeoutMs) {
#ifdef CROSSLAB_HAVE_KEYCHAIN
  QKeychain::ReadPasswordJob job(QString::fromLatin1(kService));
  job.setKey(name);
  KeyringReply r = runJob(job, timeoutMs);
  if (r.ok) r.value = job.textData();
  if (r.ok && r.value.isEmpty()) {
    r.ok = false;
    r.error = QStringLiteral("no '%1' in the OS keyring").arg(name);
  }
  return r;
#else
  (void)name;
  (void)timeoutMs;
  return {false, {}, QStringLiteral("this build has no keyring support")};
#endif
}

KeyringReply writeSecret(const QString& name, const QString& value, int timeoutMs) {
#ifdef CROSSLAB_HAVE_KEYCHAIN
  QKeychain::WritePasswordJob job(QString::fromLatin1(kService));
  job.setKey(name);
  job.setTextData(value);
  return runJob(job, timeoutMs);
#else
  (void)name;
  (void)value;
  (void)timeoutMs;
  return {false, {}, QStringLiteral("this build has no keyring support")};
#endif
}

KeyringReply forgetSecret(const QString& name, int timeoutMs) {
#ifdef CROSSLAB_HAVE_KEYCHAIN
  QKeychain::DeletePasswordJob job(QString::fromLatin1(kService));
  job.setKey(name);
  return runJob(job, timeoutMs);
#else
  (void)name;
  (void)timeoutMs;
  return {false, {}, QStringLiteral("this build has no keyring support")};
#endif
}

venues::SecretGuard outgoingGuard() {
  auto guard = venues::SecretGuard::fromEnvironment();
  // Keys kept in the keyring are secrets too, whether or not the environment has them.
  for (const char* name : kKnownSecretNames)
    if (auto r = readSecret(name, 2000); r.ok) guard.addSecret(name, r.value.toStdString());
  return guard;
}

}  // namespace crosslab::secrets
