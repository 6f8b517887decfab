#include "widgets/background_job.h"

#include <QThread>

#include <exception>

namespace crosslab::widgets {

BackgroundJob::BackgroundJob(QString label, Work work, QObject* parent)
    : QObject(parent), label_(std::move(label)), work_(std::move(work)) {}

BackgroundJob::~BackgroundJob() {
  if (!thread_) return;
  cancel_ = true;
  thread_->wait();
  delete thread_;
}

void BackgroundJob::start() {
  thread_ = QThread::create([this] {
    try {
      work_(cancel_);
    } catch (const std::exception& e) {
      error_ = QString::fromStdString(e.what());
      if (error_.isEmpty()) error_ = tr("%1 failed").arg(label_);
    }
  });
  // Queued to this object's (GUI) thread; error_ is read after the thread has finished.
  connect(thread_, &QThread::finished, this, [this] { emit finished(error_); });
  thread_->start();
}

}  // namespace crosslab::widgets
