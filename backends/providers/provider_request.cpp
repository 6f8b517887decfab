#include "backends/providers/provider_request.h"

#include <QDateTime>
#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace crosslab::providers {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPollMs = 50;  // how often a try looks at the cancel flag

// What one try came back with.
struct Attempt {
  int status = 0;
  std::string body;
  QNetworkReply::NetworkError error = QNetworkReply::NoError;
  QString errorText;
  bool timedOut = false;
  bool cancelled = false;
  int retryAfterS = -1;
};

bool cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(); }

// Retry-After: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); -1 when absent or unreadable.
int parseRetryAfter(const QByteArray& value) {
  if (value.isEmpty()) return -1;
  bool ok = false;
  const int s = value.trimmed().toInt(&ok);
  if (ok) return std::max(0, s);
  const QDateTime at = QDateTime::fromString(QString::fromLatin1(value.trimmed()), Qt::RFC2822Date);
  if (!at.isValid()) return -1;
  return static_cast<int>(std::max<qint64>(0, QDateTime::currentDateTimeUtc().secsTo(at)));
}

Attempt sendOnce(const HttpCall& call, int timeoutMs, const std::atomic<bool>* cancel) {
  QNetworkAccessManager nam;
  QNetworkRequest req{QUrl(call.url)};
  req.setRawHeader("Authorization", call.authorization);
  req.setRawHeader("accept", "application/json");
  if (!call.body.empty()) req.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
  Attempt a;
  QNetworkReply* reply = nam.sendCustomRequest(req, call.method, QByteArray::fromStdString(call.body));
  QEventLoop loop;
  QTimer limit;
  limit.setSingleShot(true);
  QObject::connect(&limit, &QTimer::timeout, &loop, [&] {
    a.timedOut = true;
    reply->abort();
  });
  QTimer poll;
  QObject::connect(&poll, &QTimer::timeout, &loop, [&] {
    if (!cancelled(cancel)) return;
    a.cancelled = true;
    reply->abort();
  });
  QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
  limit.start(std::max(1, timeoutMs));
  poll.start(kPollMs);
  if (!reply->isFinished()) loop.exec();
  a.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  a.error = reply->error();
  a.errorText = reply->errorString();
  // An aborted reply is closed: reading it only makes Qt warn ("device not open").
  if (reply->isOpen()) a.body = reply->readAll().toStdString();
  a.retryAfterS = parseRetryAfter(reply->rawHeader("Retry-After"));
  return a;  // `nam` owns and deletes the reply
}

// Qt reports HTTP error statuses as NetworkErrors too (ContentNotFoundError for 404 …);
// these are the ones about the connection itself.
bool transportFailed(QNetworkReply::NetworkError e) {
  return (e > QNetworkReply::NoError && e < QNetworkReply::ContentAccessDenied) ||
         e == QNetworkReply::ProtocolFailure;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

std::string shortBody(const std::string& body) {
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

void checkApiUrl(const QString& baseUrl, const std::string& provider) {
  const QUrl u(baseUrl, QUrl::StrictMode);
  const QString scheme = u.scheme().toLower();
  if (!u.isValid() || (scheme != "http" && scheme != "https") || u.host().isEmpty())
    throw ProviderError("the " + provider + " API URL '" + baseUrl.toStdString() +
                            "' is not an http(s) URL with a host (e.g. https://admin.hotaisle.app/api)",
                        0, Failure::BadRequest, 0);
}

HttpReply boundedRequest(const HttpCall& call, const RequestBounds& bounds) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(bounds.deadlineMs);
  const std::string what = call.method.toStdString() + " " + call.path.toStdString();
  auto tries = [&start](int n) {
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    return std::to_string(n) + (n == 1 ? " try in " : " tries in ") + seconds(s);
  };
  auto msLeft = [&deadline] {
    return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  };
  const std::string notRepeated = "; it was not repeated (it creates something billable), and " + call.provider +
                                  " may have acted on it";
  int delayMs = bounds.backoffMs;
  for (int attempt = 1;; ++attempt) {
    if (cancelled(bounds.cancel))
      throw ProviderError("cancelled before " + what + " was sent", 0, Failure::Cancelled, attempt - 1);
    const int left = msLeft();
    Attempt a = sendOnce(call, std::min(bounds.attemptTimeoutMs, std::max(1, left)), bounds.cancel);
    if (a.cancelled)
      throw ProviderError("cancelled: " + what + " was stopped in flight" + (call.repeatable ? "" : notRepeated), 0,
                          Failure::Cancelled, attempt, !call.repeatable);

    Failure failure = Failure::Http;
    bool retryable = false;
    std::string reason;
    if (!transportFailed(a.error) && !a.timedOut && a.status > 0) {
      const bool ok = (a.status >= 200 && a.status < 300) ||
                      std::find(call.okStatuses.begin(), call.okStatuses.end(), a.status) != call.okStatuses.end();
      if (ok) return {a.status, std::move(a.body), attempt};
      if (a.status == 401)
        throw ProviderError(call.provider + " rejected the API key (HTTP 401): check the key", 401, Failure::Rejected,
                            attempt);
      if (a.status == 403)
        throw ProviderError("the " + call.provider + " API key lacks permission for this request (HTTP 403)", 403,
                            Failure::Rejected, attempt);
      retryable = a.status == 429 || a.status >= 500;
      reason = what + " failed: HTTP " + std::to_string(a.status) + " " + shortBody(a.body);
    } else if (a.timedOut) {
      failure = Failure::NoAnswer;
      retryable = true;
      reason = call.provider + " did not answer in time: no reply to " + what;
    } else if (a.status > 0 || a.error == QNetworkReply::RemoteHostClosedError) {
      failure = Failure::Interrupted;
      retryable = true;
      reason = call.provider + " closed the connection before its reply to " + what + " was complete";
    } else if (a.error == QNetworkReply::ProtocolUnknownError || a.error == QNetworkReply::ProtocolInvalidOperationError) {
      failure = Failure::BadRequest;
      reason = "cannot send " + what + " to " + call.url.toStdString() + ": " + a.errorText.toStdString();
    } else {
      failure = Failure::Unreachable;
      // A wrong host name or a TLS failure will not mend itself within the bound.
      retryable = a.error != QNetworkReply::HostNotFoundError && a.error != QNetworkReply::SslHandshakeFailedError;
      reason = "cannot reach " + call.provider + " at " + call.url.toStdString() + ": " + a.errorText.toStdString();
    }
    // The request reached the provider and its outcome is unknown.
    const bool ambiguous = !call.repeatable && failure != Failure::Unreachable && failure != Failure::BadRequest &&
                           !(failure == Failure::Http && a.status < 500);
    const std::string tail = ambiguous ? notRepeated : std::string();
    if (!retryable || !call.repeatable || attempt >= bounds.maxAttempts)
      throw ProviderError(reason + " (" + tries(attempt) + ")" + tail, a.status, failure, attempt, ambiguous);
    const int waitMs = a.retryAfterS >= 0 ? a.retryAfterS * 1000 : delayMs;
    if (waitMs >= msLeft()) {
      const std::string why = a.retryAfterS >= 0 ? "; it asked to wait " + std::to_string(a.retryAfterS) + " s, past the "
                                                 : "; stopped at the ";
      throw ProviderError(reason + " (" + tries(attempt) + why + seconds(bounds.deadlineMs / 1000.0) + " bound)",
                          a.status, failure, attempt);
    }
    spdlog::info("{}: {} -> {}; retry {} in {} ms", call.provider, what,
                 a.status ? std::to_string(a.status) : a.errorText.toStdString(), attempt, waitMs);
    for (const auto until = Clock::now() + std::chrono::milliseconds(waitMs); Clock::now() < until;) {
      if (cancelled(bounds.cancel))
        throw ProviderError("cancelled while waiting to retry " + what, 0, Failure::Cancelled, attempt);
      QThread::msleep(static_cast<unsigned long>(std::min(kPollMs, std::max(1, msLeft()))));
    }
    delayMs = std::min(delayMs * 2, 30000);
  }
}

}  // namespace crosslab::providers
