#pragma once
// Reads a server's Prometheus /metrics while the Benchmarks panel runs a sweep against it
// (ours or vLLM, through an SSH tunnel or not: core/bench/server_metrics.h): once before the
// sweep's first request, every interval while it runs, and once after it ended. Asynchronous
// (QNetworkAccessManager, one read at a time, each bounded by a transfer timeout): nothing
// here blocks the GUI thread. A server without /metrics (a 404, a page that is not
// Prometheus's format, no answer) is read once: the panel then says so and shows only the
// client's figures.

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <optional>

#include "core/bench/server_metrics.h"

class QNetworkAccessManager;
class QNetworkReply;
class QTimer;

namespace crosslab::backends {

class ServerMetricsPoller : public QObject {
  Q_OBJECT
 public:
  explicit ServerMetricsPoller(QObject* parent = nullptr);
  ~ServerMetricsPoller() override;

  void setInterval(int ms) { intervalMs_ = ms; }
  void setTimeout(int ms) { timeoutMs_ = ms; }

  // Reads BASEURL/metrics now; firstRead() follows, then a live reading() after each later
  // read, every interval, until finish() or stop(). A start while reading starts over.
  void start(const QString& baseUrl);
  // One last read (after the one under way, if any); then sweepRead() with what the engine did
  // since the first read. With the first read still under way: sweepRead(false, …) at once;
  // after it failed, or stop(): nothing (there is nothing to compare).
  void finish();
  // No more reads and no more signals.
  void stop();
  bool reading() const { return state_ != State::Idle; }

 signals:
  void firstRead(bool ok, const QString& why);  // why: "HTTP 404", "no answer in 3 s", …
  void liveReading(const bench::ServerReading& sinceLast);
  void sweepRead(bool ok, const bench::ServerReading& sinceFirst, const QString& why);

 private:
  enum class State { Idle, First, Live, Last };
  void read();
  void onReply(QNetworkReply* reply);

  QNetworkAccessManager* net_;
  QTimer* timer_;
  QString url_;
  State state_ = State::Idle;
  bool inFlight_ = false;
  quint64 generation_ = 0;  // replies of an earlier start() or stop() are dropped
  int intervalMs_ = 1000;
  int timeoutMs_ = 3000;
  QElapsedTimer clock_;
  std::optional<bench::MetricsSnapshot> first_, last_;
  qint64 firstMs_ = 0, lastMs_ = 0;
};

}  // namespace crosslab::backends
