#pragma once
// The log panel: every spdlog message (core, backends, widgets) appears here. The sink
// may be called from any thread; lines are queued to the GUI thread and appended in
// batches by a coalescing timer, so a chatty worker cannot flood the event loop.

#include <QMutex>
#include <QPlainTextEdit>
#include <QStringList>
#include <QTimer>
#include <memory>

namespace spdlog::sinks {
class sink;
}

namespace crosslab::widgets {

class LogPanel : public QPlainTextEdit {
  Q_OBJECT
 public:
  static constexpr int kMaxLines = 5000;

  explicit LogPanel(QWidget* parent = nullptr);
  ~LogPanel() override;

  // Thread-safe; the line shows at the next flush (≤ 10 times a second).
  void post(const QString& line);
  // Appends what is pending now (tests, and the flush timer).
  void flushPending();

 private:
  std::shared_ptr<spdlog::sinks::sink> sink_;
  QMutex mutex_;
  QStringList pending_;
  QTimer flushTimer_;
};

}  // namespace crosslab::widgets
