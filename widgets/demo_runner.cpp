#include "widgets/demo_runner.h"

#include <spdlog/spdlog.h>

#include "backends/lab_locations.h"

namespace crosslab::widgets {
namespace {

using demo::DemoProgress;
using demo::DemoStage;

constexpr int kTokenizerSteps = 3;  // data, tokenizer, base model files

}  // namespace

DemoRunner::DemoRunner(const QString& labPath, bool quick, QObject* parent)
    : QObject(parent), labPath_(labPath), quick_(quick) {}

DemoRunner::~DemoRunner() {
  if (process_) process_->disconnect(this);  // no finished() into a window that is being destroyed
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

void DemoRunner::start() {
  process_ = new QProcess(this);
  process_->setObjectName("demoProcess");
  process_->setProcessChannelMode(QProcess::MergedChannels);  // progress lines come on stderr
  connect(process_, &QProcess::readyRead, this, &DemoRunner::onOutput);
  connect(process_, &QProcess::finished, this, &DemoRunner::onFinished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) onFinished(-1, QProcess::CrashExit);
  });
  QStringList args = {"demo", labPath_};
  if (quick_) args << "--quick";
  spdlog::info("first start: {} {}", backends::cliExecutable().toStdString(), args.join(' ').toStdString());
  process_->start(backends::cliExecutable(), args);
}

void DemoRunner::cancel() {
  cancelled_ = true;
  if (process_ && process_->state() != QProcess::NotRunning) process_->terminate();
}

void DemoRunner::onOutput() {
  if (!process_) return;
  partial_ += process_->readAll();
  for (int nl; (nl = partial_.indexOf('\n')) >= 0;) {
    const QString line = QString::fromUtf8(partial_.left(nl)).trimmed();
    partial_.remove(0, nl + 1);
    if (!line.isEmpty()) onLine(line);
  }
}

void DemoRunner::onLine(const QString& line) {
  if (line.startsWith('{')) return;  // the final JSON report, if any
  lines_.append(line);
  while (lines_.size() > 20) lines_.removeFirst();
  spdlog::info("{}", line.toStdString());
  emit outputLine(line);
  if (const auto p = demo::parseDemoProgressLine(line.toStdString(), phase_)) onProgress(*p);
}

void DemoRunner::onProgress(const DemoProgress& p) {
  const auto stage = demo::demoStageOf(p.phase);
  if (p.kind == DemoProgress::Kind::Begin) {
    phase_ = p.phase;
    if (p.phase == "lora") loraRan_ = true;
    emit phaseBegan(QString::fromStdString(p.phase));
    if (stage == DemoStage::Tokenizer) emit stageProgress(int(*stage), tokenizerDone_, kTokenizerSteps);
    return;
  }
  if (p.kind == DemoProgress::Kind::End) {
    if (p.phase == "lab") emit labCreated();
    if (!stage) return;
    if (*stage == DemoStage::Tokenizer) {
      emit stageProgress(int(*stage), ++tokenizerDone_, kTokenizerSteps);
      if (p.phase == "base model") emit stageFinished(int(*stage));
    } else if (*stage != DemoStage::Eval || p.phase == "eval lora" || !loraRan_) {
      emit stageFinished(int(*stage));
    }
    return;
  }
  if (!stage) return;
  if (*stage != DemoStage::Eval) {
    emit stageProgress(int(*stage), p.done, p.total);
    return;
  }
  // Both models answer the same questions: one count over base + tuned.
  (p.phase == "eval lora" ? evalLoraDone_ : evalBaseDone_) = p.done;
  evalTotal_ = p.total * (loraRan_ ? 2 : 1);
  emit stageProgress(int(*stage), evalBaseDone_ + evalLoraDone_, evalTotal_);
}

void DemoRunner::onFinished(int exitCode, QProcess::ExitStatus status) {
  onOutput();
  const QString tail = QString::fromUtf8(partial_).trimmed();  // a last line without a newline
  partial_.clear();
  if (!tail.isEmpty()) onLine(tail);
  const bool ok = !cancelled_ && status == QProcess::NormalExit && exitCode == 0;
  QString reason;
  if (cancelled_) reason = tr("the demo was cancelled");
  else if (exitCode == -1) reason = tr("could not start %1").arg(backends::cliExecutable());
  else if (!ok) reason = tr("crosslab-cli demo exited with code %1: %2").arg(exitCode).arg(lines_.value(lines_.size() - 1));
  emit finished(ok, reason);
}

}  // namespace crosslab::widgets
