#include "backends/bench/server_metrics_poller.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>
#include <QUrl>

namespace crosslab::backends {

ServerMetricsPoller::ServerMetricsPoller(QObject* parent)
    : QObject(parent), net_(new QNetworkAccessManager(this)), timer_(new QTimer(this)) {
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, [this] { read(); });
  clock_.start();
}

ServerMetricsPoller::~ServerMetricsPoller() { stop(); }

void ServerMetricsPoller::start(const QString& baseUrl) {
  stop();
  url_ = baseUrl;
  while (url_.endsWith('/')) url_.chop(1);
  url_ += "/metrics";
  state_ = State::First;
  read();
}

void ServerMetricsPoller::finish() {
  if (state_ == State::Idle) return;
  if (state_ == State::First || !first_) {  // no first read yet: nothing to compare with
    stop();
    emit sweepRead(false, {}, tr("the server's counters were not read before the sweep"));
    return;
  }
  state_ = State::Last;
  timer_->stop();
  if (!inFlight_) read();  // else: the reply under way reads again (read()'s handler)
}

void ServerMetricsPoller::stop() {
  ++generation_;
  timer_->stop();
  state_ = State::Idle;
  inFlight_ = false;
  first_.reset();
  last_.reset();
}

void ServerMetricsPoller::read() {
  if (state_ == State::Idle) return;
  QNetworkRequest req{QUrl(url_)};
  req.setTransferTimeout(timeoutMs_);
  req.setRawHeader("Accept", "text/plain");
  inFlight_ = true;
  QNetworkReply* reply = net_->get(req);
  const quint64 gen = generation_;
  const State sentIn = state_;
  connect(reply, &QNetworkReply::finished, this, [this, reply, gen, sentIn] {
    reply->deleteLater();
    if (gen != generation_) return;
    inFlight_ = false;
    if (sentIn != State::Last && state_ == State::Last) {  // finish() came meanwhile: read once more
      read();
      return;
    }
    onReply(reply);
  });
}

void ServerMetricsPoller::onReply(QNetworkReply* reply) {
  const qint64 now = clock_.elapsed();
  QString why;
  std::optional<bench::MetricsSnapshot> snap;
  const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (reply->error() == QNetworkReply::OperationCanceledError) {
    why = tr("no answer in %1 s").arg(timeoutMs_ / 1000.0);
  } else if (status != 0 && status != 200) {
    why = tr("HTTP %1").arg(status);
  } else if (reply->error() != QNetworkReply::NoError) {
    why = reply->errorString();
  } else {
    std::string error;
    snap = bench::parsePrometheusText(reply->readAll().toStdString(), &error);
    if (!snap) why = tr("not Prometheus's text format: %1").arg(QString::fromStdString(error));
  }
  const State was = state_;
  if (was == State::First) {
    if (!snap) {
      stop();
      emit firstRead(false, why);
      return;
    }
    first_ = last_ = snap;
    firstMs_ = lastMs_ = now;
    state_ = State::Live;
    timer_->start(intervalMs_);
    emit firstRead(true, {});
    return;
  }
  if (was == State::Last) {
    const auto first = first_;
    const qint64 firstMs = firstMs_;
    stop();
    if (!snap) {
      emit sweepRead(false, {}, why);
      return;
    }
    emit sweepRead(true, bench::serverReading(*first, *snap, double(now - firstMs) / 1000.0), {});
    return;
  }
  // Live: a failed read is skipped (the next one may answer); the sweep's own end reads again.
  if (snap) {
    const bench::ServerReading r = bench::serverReading(*last_, *snap, double(now - lastMs_) / 1000.0);
    last_ = snap;
    lastMs_ = now;
    emit liveReading(r);
  }
  if (state_ == State::Live) timer_->start(intervalMs_);
}

}  // namespace crosslab::backends
