#include "backends/bench/bench_process.h"

#include "backends/child_process.h"
#include "backends/lab_locations.h"

#include <QCoreApplication>
#include <QDir>
#include <QJsonDocument>

namespace crosslab::backends {

BenchProcess::BenchProcess(QObject* parent) : QObject(parent), process_(new QProcess(this)), cliPath_(defaultCliPath()) {
  dieWithParent(*process_);  // a sweep of a window that is gone measures for nobody
  connect(process_, &QProcess::readyReadStandardOutput, this, &BenchProcess::readLines);
  connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    readLines();
    QString err = QString::fromUtf8(process_->readAllStandardError()).trimmed();
    if (status == QProcess::CrashExit && err.isEmpty()) err = tr("crosslab-cli bench crashed");
    emit finished(status == QProcess::CrashExit ? -1 : code, err.section('\n', 0, 0), stopRequested_);
  });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) emit finished(-1, tr("cannot start %1").arg(cliPath_), false);
  });
}

BenchProcess::~BenchProcess() {
  if (isRunning()) {
    process_->terminate();
    if (!process_->waitForFinished(3000)) process_->kill();
  }
}

QString BenchProcess::defaultCliPath() { return cliExecutable(); }

bool BenchProcess::start(const QStringList& args) {
  if (isRunning()) return false;
  pending_.clear();
  stopRequested_ = false;
  process_->start(cliPath_, QStringList{"bench"} + args + QStringList{"--progress"});
  return true;
}

void BenchProcess::stop() {
  if (!isRunning()) return;
  stopRequested_ = true;
  process_->terminate();  // SIGTERM: the CLI aborts the level and keeps what finished
}

void BenchProcess::readLines() {
  pending_ += process_->readAllStandardOutput();
  int nl;
  while ((nl = pending_.indexOf('\n')) >= 0) {
    const QByteArray line = pending_.left(nl);
    pending_.remove(0, nl + 1);
    const auto doc = QJsonDocument::fromJson(line);
    if (doc.isObject()) dispatch(doc.object());
  }
}

void BenchProcess::dispatch(const QJsonObject& e) {
  const QString kind = e.value("event").toString();
  const int c = e.value("concurrency").toInt();
  if (kind == "level_start") {
    emit levelStarted(c, e.value("planned").toInt());
  } else if (kind == "tick") {
    emit tick(c, e.value("t").toDouble(), e.value("aggregate_tok_s").toDouble(), e.value("per_stream_tok_s").toDouble(),
              e.value("done").toInt(), e.value("failed").toInt(), e.value("planned").toInt());
  } else if (kind == "request") {
    emit requestDone(c, e.value("t").toDouble(), e.value("ttft_ms").toDouble(), e.value("ok").toBool(),
                     e.value("error").toString());
  } else if (kind == "level") {
    emit levelDone(e.value("result").toObject());
  } else if (kind == "sweep") {
    emit sweepDone(e);
  }
}

}  // namespace crosslab::backends
