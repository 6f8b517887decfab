#include "widgets/log_panel.h"

#include <QFontDatabase>
#include <QMetaObject>
#include <QPointer>
#include <QScrollBar>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

namespace crosslab::widgets {
namespace {

// Forwards formatted lines to a LogPanel while it exists.
class PanelSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit PanelSink(LogPanel* panel) : panel_(panel) {}
  void detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    panel_ = nullptr;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (!panel_) return;
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    QString line = QString::fromUtf8(buf.data(), static_cast<int>(buf.size())).trimmed();
    panel_->post(line);
  }
  void flush_() override {}

 private:
  LogPanel* panel_;
};

}  // namespace

LogPanel::LogPanel(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setMaximumBlockCount(kMaxLines);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setPlaceholderText(tr("Log messages from the workbench appear here."));
  flushTimer_.setSingleShot(true);
  flushTimer_.setInterval(100);
  connect(&flushTimer_, &QTimer::timeout, this, &LogPanel::flushPending);

  auto sink = std::make_shared<PanelSink>(this);
  sink->set_pattern("%H:%M:%S %^%-5l%$ %v");
  sink_ = sink;
  spdlog::default_logger()->sinks().push_back(sink_);
}

LogPanel::~LogPanel() {
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  static_cast<PanelSink*>(sink_.get())->detach();
}

void LogPanel::post(const QString& line) {
  {
    QMutexLocker lock(&mutex_);
    pending_.append(line);
  }
  // Start the coalescing timer on the GUI thread, whichever thread logged.
  QMetaObject::invokeMethod(this, [this] { if (!flushTimer_.isActive()) flushTimer_.start(); },
                            Qt::QueuedConnection);
}

void LogPanel::flushPending() {
  QStringList lines;
  {
    QMutexLocker lock(&mutex_);
    lines.swap(pending_);
  }
  if (lines.isEmpty()) return;
  auto* bar = verticalScrollBar();
  const bool atEnd = bar->value() == bar->maximum();
  appendPlainText(lines.join('\n'));
  if (atEnd) bar->setValue(bar->maximum());
}

}  // namespace crosslab::widgets
