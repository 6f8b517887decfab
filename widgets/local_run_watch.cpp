#include "widgets/local_run_watch.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <spdlog/spdlog.h>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"

namespace crosslab::widgets {

using train::RunState;

LocalRunWatch::LocalRunWatch(backends::LabSession* session, qint64 runId, const QString& runDir, Options options,
                             QObject* parent)
    : QObject(parent), session_(session), runId_(runId), monitor_(std::make_unique<train::RunMonitor>(options.monitor)) {
  if (!runDir.isEmpty()) {
    eventsPath_ = runDir + "/events.jsonl";
    // Only lines written from now on: an earlier attempt's lines (a resumed run) are history.
    eventsOffset_ = QFile(eventsPath_).size();
  }
  timer_.setInterval(options.tickMs);
  connect(&timer_, &QTimer::timeout, this, &LocalRunWatch::tick);
  timer_.start();
}

LocalRunWatch::~LocalRunWatch() = default;

QStringList LocalRunWatch::lastLines(int n) const {
  QStringList out;
  const auto& lines = monitor_->lastLines();
  const size_t from = lines.size() > size_t(n) ? lines.size() - size_t(n) : 0;
  for (size_t i = from; i < lines.size(); ++i) out << QString::fromStdString(lines[i]);
  return out;
}

void LocalRunWatch::readEvents() {
  if (eventsPath_.isEmpty()) return;
  QFile f(eventsPath_);
  if (!f.open(QIODevice::ReadOnly)) return;
  if (f.size() < eventsOffset_) {  // rewritten (a resume truncates to its checkpoint): read it again
    eventsOffset_ = 0;
    eventsPartial_.clear();
  }
  if (!f.seek(eventsOffset_)) return;
  const QByteArray data = f.readAll();
  eventsOffset_ += data.size();
  eventsPartial_ += data;
  qsizetype start = 0;
  for (qsizetype nl; (nl = eventsPartial_.indexOf('\n', start)) >= 0; start = nl + 1)
    if (nl > start) monitor_->feedEventLine(eventsPartial_.mid(start, nl - start).toStdString());
  eventsPartial_.remove(0, start);
}

void LocalRunWatch::tick() {
  if (ended_) return;
  readEvents();
  monitor_->tick();
  publish();
}

void LocalRunWatch::feedOutput(const QByteArray& chunk) {
  if (ended_ || chunk.isEmpty()) return;
  monitor_->feedOutput(chunk.toStdString());
  publish();
}

void LocalRunWatch::processFinished(int exitCode, QProcess::ExitStatus status, bool userStopped) {
  if (ended_) return;
  readEvents();  // the end event may have landed after the last tick
  ended_ = true;
  timer_.stop();
  if (userStopped && monitor_->state() != RunState::Failed) {
    // Stop: the trainer records "stopped" itself after SIGTERM; if it had to be killed, we do.
    const std::string st = storeStatus();
    if (runId_ && (st == "running" || st == "pending" || st == "stalled")) {
      try {
        session_->store()->setRunStatus(runId_, "stopped", "stopped from the Training panel");
      } catch (const std::exception& e) {
        spdlog::warn("run {}: {}", runId_, e.what());
      }
    }
    emit stateChanged(RunState::Finished, tr("stopped"));
    return;
  }
  // QProcess reports a crash with the signal number as the exit code (Qt 6 on Unix); the
  // monitor speaks the shell's 128+N.
  monitor_->processExited(status == QProcess::CrashExit ? (exitCode > 0 ? 128 + exitCode : -1) : exitCode);
  publish();
  // "exited with status 1" says little: the CLI's one-line error (its last line) says why.
  const auto& lines = monitor_->lastLines();
  if (monitor_->state() == RunState::Failed && monitor_->reason().rfind("exited with status", 0) == 0 && !lines.empty() &&
      lines.back().rfind("error: ", 0) == 0) {
    const std::string why = monitor_->reason() + ": " + lines.back();
    try {
      if (markedByUs_ && storeStatus() == "failed") session_->store()->setRunStatus(runId_, "failed", why);
    } catch (const std::exception& e) {
      spdlog::warn("run {}: {}", runId_, e.what());
    }
    emit stateChanged(RunState::Failed, QString::fromStdString(why));
  }
}

std::string LocalRunWatch::storeStatus() const {
  if (!runId_ || !session_->isOpen()) return {};
  try {
    for (const auto& r : session_->store()->runSummaries())
      if (r.id == runId_) return r.status;
  } catch (const std::exception& e) {
    spdlog::warn("run {}: {}", runId_, e.what());
  }
  return {};
}

void LocalRunWatch::publish() {
  const RunState s = monitor_->state();
  const std::string reason = monitor_->reason();
  if (s == published_ && reason == publishedReason_) return;
  // The same verdict with a better reason (a traceback's exception line arrived later):
  // rewrite the reason we wrote, never one the trainer wrote.
  const bool sameState = s == published_;
  published_ = s;
  publishedReason_ = reason;
  if (runId_ && session_->isOpen() && (s == RunState::Failed || s == RunState::Stalled || s == RunState::Running)) {
    const std::string st = storeStatus();
    std::string next;
    if (sameState) {
      if (markedByUs_ && st == train::toString(s)) next = st;
    } else {
      if (s == RunState::Failed && (st == "running" || st == "pending" || st == "stalled")) next = "failed";
      if (s == RunState::Stalled && (st == "running" || st == "pending")) next = "stalled";
      if (s == RunState::Running && st == "stalled") next = "running";
    }
    if (!next.empty()) {
      markedByUs_ = next != "running";
      QJsonArray lines;
      for (const auto& l : lastLines(20)) lines.append(l);
      const QJsonObject data{{"state", train::toString(s)}, {"reason", QString::fromStdString(reason)}, {"last_lines", lines}};
      try {
        auto* store = session_->store();
        store->setRunStatus(runId_, next, next == "running" ? std::string() : reason);
        store->addEvent(runId_, std::nullopt, "train.watchdog", next == "running" ? "alive again" : reason,
                        QJsonDocument(data).toJson(QJsonDocument::Compact).toStdString());
      } catch (const std::exception& e) {
        spdlog::warn("watchdog of run {}: {}", runId_, e.what());
      }
    }
  }
  if (s != RunState::Waiting) emit stateChanged(s, QString::fromStdString(reason));
}

}  // namespace crosslab::widgets
