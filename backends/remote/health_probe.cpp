#include "backends/remote/health_probe.h"

#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QThread>
#include <QUrl>

#include <chrono>

namespace crosslab::remote {

int httpStatus(const QString& url, int timeoutMs) {
  QNetworkAccessManager nam;
  QNetworkRequest req{QUrl(url)};
  req.setTransferTimeout(timeoutMs);
  QNetworkReply* reply = nam.get(req);
  QEventLoop loop;
  QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
  loop.exec();
  const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  reply->deleteLater();
  return status;
}

int waitForHealthy(const QString& url, int timeoutSeconds, int pollMs, const std::function<bool()>& alive) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    status = httpStatus(url, 5000);
    if (status == 200) return status;
    if (alive && !alive()) return status;
    QThread::msleep(static_cast<unsigned long>(pollMs));
  }
  return status;
}

}  // namespace crosslab::remote
