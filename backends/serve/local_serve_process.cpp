#include "backends/serve/local_serve_process.h"

#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QTimer>
#include <QUrl>

#include "backends/child_process.h"
#include "backends/lab_locations.h"

namespace crosslab::backends {
namespace {
constexpr int kKeptLines = 12;     // an early exit shows this many of its last lines
constexpr int kProbeMs = 150;      // /health poll interval while starting
constexpr int kGraceMs = 5000;     // SIGTERM, then SIGKILL after this
}  // namespace

LocalServeProcess::LocalServeProcess(QObject* parent)
    : QObject(parent),
      process_(new QProcess(this)),
      net_(new QNetworkAccessManager(this)),
      probeTimer_(new QTimer(this)),
      killTimer_(new QTimer(this)),
      cliPath_(cliExecutable()) {
  net_->setProxy(QNetworkProxy::NoProxy);  // loopback: never through an environment proxy
  dieWithParent(*process_);  // the window goes, however it goes: the server goes too
  probeTimer_->setInterval(kProbeMs);
  probeTimer_->setSingleShot(true);
  connect(probeTimer_, &QTimer::timeout, this, &LocalServeProcess::probeHealth);
  killTimer_->setSingleShot(true);
  killTimer_->setInterval(kGraceMs);
  connect(killTimer_, &QTimer::timeout, this, [this] {
    if (isRunning()) process_->kill();
  });
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] { readOutput(QProcess::StandardOutput); });
  connect(process_, &QProcess::readyReadStandardError, this, [this] { readOutput(QProcess::StandardError); });
  connect(process_, &QProcess::finished, this, &LocalServeProcess::onFinished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    const bool wanted = state_ != State::Stopping;
    state_ = State::Idle;
    probeTimer_->stop();
    if (wanted)
      emit failed(tr("cannot start %1: %2").arg(cliPath_, process_->errorString()));
    else
      emit stopped();
  });
}

LocalServeProcess::~LocalServeProcess() {
  if (!isRunning()) return;
  process_->blockSignals(true);  // the owner is going away: no signals from here on
  process_->terminate();
  if (!process_->waitForFinished(kGraceMs)) {
    process_->kill();
    process_->waitForFinished(2000);
  }
}

bool LocalServeProcess::start(const QStringList& serveArgs) {
  if (isRunning() || state_ != State::Idle) return false;
  args_ = serveArgs;
  baseUrl_.clear();
  pendingOut_.clear();
  pendingErr_.clear();
  lines_.clear();
  state_ = State::Starting;
  emit logLine(tr("starting: %1 serve %2 --host 127.0.0.1 --port 0").arg(cliPath_, serveArgs.join(' ')));
  process_->start(cliPath_, QStringList{"serve"} + serveArgs + QStringList{"--host", "127.0.0.1", "--port", "0"});
  return true;
}

void LocalServeProcess::stop() {
  probeTimer_->stop();
  if (!isRunning()) {
    if (state_ != State::Idle) {
      state_ = State::Idle;
      emit stopped();
    }
    return;
  }
  if (state_ == State::Stopping) return;
  state_ = State::Stopping;
  process_->terminate();  // SIGTERM: serve stops its listener and engine and exits 0
  killTimer_->start();
}

void LocalServeProcess::readOutput(QProcess::ProcessChannel channel) {
  QByteArray& pending = channel == QProcess::StandardOutput ? pendingOut_ : pendingErr_;
  process_->setReadChannel(channel);
  pending += process_->readAll();
  int nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(pending.left(nl)).trimmed();
    pending.remove(0, nl + 1);
    if (line.isEmpty()) continue;
    lines_ << line;
    while (lines_.size() > kKeptLines) lines_.removeFirst();
    emit logLine(line);
    static const QRegularExpression listening(R"(^listening on (http://[^\s]+:\d+)$)");
    const auto m = listening.match(line);
    if (m.hasMatch() && state_ == State::Starting && baseUrl_.isEmpty()) {
      baseUrl_ = m.captured(1);
      probeHealth();
    }
  }
}

void LocalServeProcess::probeHealth() {
  if (state_ != State::Starting || probing_) return;
  probing_ = true;
  QNetworkRequest req(QUrl(baseUrl_ + "/health"));
  req.setTransferTimeout(2000);
  // No keep-alive: an idle probe connection would hold one of the server's HTTP workers,
  // and its shutdown waits for those (up to httplib's 5 s keep-alive timeout).
  req.setRawHeader("Connection", "close");
  QNetworkReply* reply = net_->get(req);
  connect(reply, &QNetworkReply::finished, this, [this, reply] {
    reply->deleteLater();
    probing_ = false;
    if (state_ != State::Starting) return;
    if (reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() == 200) {
      state_ = State::Ready;
      emit ready(baseUrl_);
    } else {
      probeTimer_->start();  // not up yet (refused, 503, timeout): ask again shortly
    }
  });
}

void LocalServeProcess::onFinished(int exitCode, QProcess::ExitStatus status) {
  readOutput(QProcess::StandardOutput);
  readOutput(QProcess::StandardError);
  for (QByteArray* rest : {&pendingOut_, &pendingErr_})
    if (!rest->trimmed().isEmpty()) lines_ << QString::fromUtf8(rest->trimmed());
  probeTimer_->stop();
  killTimer_->stop();
  const State was = state_;
  state_ = State::Idle;
  baseUrl_.clear();
  if (was == State::Stopping) {
    emit stopped();
    return;
  }
  QString why = status == QProcess::CrashExit ? tr("the server crashed") : tr("the server exited with code %1").arg(exitCode);
  if (!lines_.isEmpty()) why += ": " + lines_.join(" | ");
  emit failed(why);
}

}  // namespace crosslab::backends
