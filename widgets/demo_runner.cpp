#include "widgets/demo_runner.h"

#include <QProgressDialog>
#include <QWidget>
#include <spdlog/spdlog.h>

#include "backends/lab_locations.h"

namespace crosslab::widgets {

DemoRunner::DemoRunner(const QString& labPath, bool quick, QWidget* parent)
    : QObject(parent), labPath_(labPath), quick_(quick) {}

DemoRunner::~DemoRunner() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->kill();
    process_->waitForFinished(3000);
  }
}

void DemoRunner::start() {
  auto* parentWidget = qobject_cast<QWidget*>(parent());
  dialog_ = new QProgressDialog(tr("Building the demo lab…"), tr("Cancel"), 0, 0, parentWidget);
  dialog_->setObjectName("demoProgress");
  dialog_->setWindowTitle(tr("crosslab — first start"));
  dialog_->setMinimumDuration(0);
  dialog_->setMinimumWidth(520);
  dialog_->setAutoClose(false);
  dialog_->setAutoReset(false);
  connect(dialog_, &QProgressDialog::canceled, this, [this] {
    cancelled_ = true;
    if (process_) process_->terminate();
  });
  dialog_->show();

  process_ = new QProcess(this);
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

void DemoRunner::onOutput() {
  if (!process_) return;
  const auto text = QString::fromUtf8(process_->readAll());
  for (const auto& raw : text.split('\n', Qt::SkipEmptyParts)) {
    const QString line = raw.trimmed();
    if (line.isEmpty() || line.startsWith('{')) continue;  // the final JSON report, if any
    lines_.append(line);
    while (lines_.size() > 20) lines_.removeFirst();
    spdlog::info("{}", line.toStdString());
    if (dialog_) dialog_->setLabelText(line);
  }
}

void DemoRunner::onFinished(int exitCode, QProcess::ExitStatus status) {
  onOutput();
  if (dialog_) {
    dialog_->disconnect(this);  // closing a QProgressDialog emits canceled()
    dialog_->close();
    dialog_->deleteLater();
  }
  const bool ok = !cancelled_ && status == QProcess::NormalExit && exitCode == 0;
  QString reason;
  if (cancelled_) reason = tr("the demo was cancelled");
  else if (exitCode == -1) reason = tr("could not start %1").arg(backends::cliExecutable());
  else if (!ok) reason = tr("crosslab-cli demo exited with code %1: %2").arg(exitCode).arg(lines_.value(lines_.size() - 1));
  emit finished(ok, reason);
}

}  // namespace crosslab::widgets
