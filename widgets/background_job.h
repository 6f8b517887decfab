#pragma once
// One piece of blocking work (a provider call, an SSH command, a transfer) on its own
// thread, so the window never waits on the network. The work sees a cancel flag; its
// exception becomes the error text; `finished` arrives on the GUI thread. Deleting a
// running job cancels it and waits for its thread.

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>

class QThread;

namespace crosslab::widgets {

class BackgroundJob : public QObject {
  Q_OBJECT
 public:
  using Work = std::function<void(const std::atomic<bool>& cancel)>;

  BackgroundJob(QString label, Work work, QObject* parent = nullptr);
  ~BackgroundJob() override;

  void start();
  void cancel() { cancel_ = true; }
  bool cancelled() const { return cancel_.load(); }
  const QString& label() const { return label_; }
  const std::atomic<bool>& cancelFlag() const { return cancel_; }

 signals:
  // On the GUI thread; error empty when the work returned normally.
  void finished(const QString& error);

 private:
  QString label_;
  Work work_;
  std::atomic<bool> cancel_{false};
  QThread* thread_ = nullptr;
  QString error_;
};

}  // namespace crosslab::widgets
