#include "widgets/bench_live_chart.h"

#include <QLineSeries>
#include <QScatterSeries>
#include <QTimer>
#include <QValueAxis>
#include <algorithm>

namespace crosslab::widgets {

BenchLiveChart::BenchLiveChart(QWidget* parent)
    : QChartView(parent),
      aggregate_(new QLineSeries),
      perStream_(new QLineSeries),
      ttft_(new QScatterSeries),
      levels_(new QScatterSeries),
      axisT_(new QValueAxis),
      axisRate_(new QValueAxis),
      axisMs_(new QValueAxis),
      timer_(new QTimer(this)) {
  setObjectName("benchLiveChart");
  // Short names: the legend must not cut them at 1024 px (the units are on the axes).
  aggregate_->setName(tr("aggregate"));
  perStream_->setName(tr("per stream"));
  ttft_->setName(tr("TTFT"));
  ttft_->setMarkerSize(6);
  levels_->setName(tr("level mean"));
  levels_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  levels_->setMarkerSize(10);
  auto* c = chart();
  c->addSeries(aggregate_);
  c->addSeries(perStream_);
  c->addSeries(levels_);
  c->addSeries(ttft_);
  axisT_->setTitleText(tr("sweep time (s)"));
  axisRate_->setTitleText(tr("output tok/s"));
  axisMs_->setTitleText(tr("TTFT ms"));
  c->addAxis(axisT_, Qt::AlignBottom);
  c->addAxis(axisRate_, Qt::AlignLeft);
  c->addAxis(axisMs_, Qt::AlignRight);
  for (auto* s : {static_cast<QXYSeries*>(aggregate_), static_cast<QXYSeries*>(perStream_), static_cast<QXYSeries*>(levels_)}) {
    s->attachAxis(axisT_);
    s->attachAxis(axisRate_);
  }
  ttft_->attachAxis(axisT_);
  ttft_->attachAxis(axisMs_);
  c->legend()->setAlignment(Qt::AlignBottom);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(160);
  timer_->setSingleShot(true);
  timer_->setInterval(kRepaintMs);
  connect(timer_, &QTimer::timeout, this, &BenchLiveChart::flush);
  clear();
}

void BenchLiveChart::clear() {
  aggPts_.clear();
  perPts_.clear();
  ttftPts_.clear();
  levelPts_.clear();
  flush();
}

void BenchLiveChart::addLevel(double t, double aggregateTokS) {
  levelPts_.append({t, aggregateTokS});
  scheduleFlush();
}

void BenchLiveChart::addRates(double t, double aggregateTokS, double perStreamTokS) {
  aggPts_.append({t, aggregateTokS});
  perPts_.append({t, perStreamTokS});
  scheduleFlush();
}

void BenchLiveChart::addTtft(double t, double ttftMs) {
  ttftPts_.append({t, ttftMs});
  scheduleFlush();
}

int BenchLiveChart::aggregatePoints() const { return static_cast<int>(aggregate_->count()); }
int BenchLiveChart::ttftPoints() const { return static_cast<int>(ttft_->count()); }

QPointF BenchLiveChart::rateAxisRange() const { return {axisRate_->min(), axisRate_->max()}; }

double BenchLiveChart::maxPlottedRate() const {
  double top = 0;
  for (const QXYSeries* s : {static_cast<QXYSeries*>(aggregate_), static_cast<QXYSeries*>(perStream_),
                             static_cast<QXYSeries*>(levels_)})
    for (const QPointF& p : s->points()) top = std::max(top, p.y());
  return top;
}

void BenchLiveChart::scheduleFlush() {
  if (!timer_->isActive()) timer_->start();  // many points, one repaint
}

void BenchLiveChart::decimate(QVector<QPointF>& points) {
  while (points.size() > kMaxPoints) decimateOnce(points);
}

// Keeps the newest half as is and every other point of the older half.
void BenchLiveChart::decimateOnce(QVector<QPointF>& points) {
  const int half = points.size() / 2;
  QVector<QPointF> out;
  out.reserve(points.size());
  for (int i = 0; i < half; i += 2) out.append(points[i]);
  for (int i = half; i < points.size(); ++i) out.append(points[i]);
  points = std::move(out);
}

void BenchLiveChart::flush() {
  ++flushes_;
  decimate(aggPts_);
  decimate(perPts_);
  decimate(ttftPts_);
  aggregate_->replace(aggPts_);
  perStream_->replace(perPts_);
  ttft_->replace(ttftPts_);
  levels_->replace(levelPts_);
  double tMax = 1, rateMax = 1, msMax = 1;
  for (const auto* pts : {&aggPts_, &perPts_, &levelPts_})
    for (const auto& p : *pts) tMax = std::max(tMax, p.x()), rateMax = std::max(rateMax, p.y());
  for (const auto& p : ttftPts_) tMax = std::max(tMax, p.x()), msMax = std::max(msMax, p.y());
  axisT_->setRange(0, tMax);
  axisRate_->setRange(0, rateMax * 1.1);
  axisMs_->setRange(0, msMax * 1.1);
}

}  // namespace crosslab::widgets
