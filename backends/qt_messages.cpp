#include "backends/qt_messages.h"

#include <QString>
#include <QtGlobal>

#include <cstdlib>
#include <spdlog/spdlog.h>

namespace crosslab::backends {
namespace {

void toLog(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  const std::string text = message.toStdString();
  const char* category = context.category ? context.category : "qt";
  if (type == QtFatalMsg) {
    spdlog::critical("{}: {}", category, text);
    std::abort();
  }
  spdlog::debug("{}: {}", category, text);
}

}  // namespace

void routeQtMessagesToLog() { qInstallMessageHandler(toLog); }

}  // namespace crosslab::backends
