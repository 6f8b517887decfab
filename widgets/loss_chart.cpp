#include "widgets/loss_chart.h"

#include <QLegendMarker>
#include <QMetaObject>
#include <QToolTip>
#include <QtCharts/QChart>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace crosslab::widgets {
namespace {

const QColor kPalette[] = {QColor("#2f6fde"), QColor("#e4572e"), QColor("#17a398"), QColor("#9c51b6"),
                           QColor("#f3a712"), QColor("#5d6d7e")};

}  // namespace

// QChartView(parent) would make a default chart that setChart() then disowns (a leak LSan
// reports): hand the view our chart at construction instead.
LossChart::LossChart(QWidget* parent) : QChartView(new QChart(), parent) {
  setObjectName("lossChart");
  QChart* c = chart();
  c->legend()->setAlignment(Qt::AlignBottom);
  c->setMargins(QMargins(4, 4, 4, 4));
  setRenderHint(QPainter::Antialiasing);
  repaint_.setSingleShot(true);
  repaint_.setInterval(kRepaintMs);
  connect(&repaint_, &QTimer::timeout, this, &LossChart::flush);
  rebuildAxes();
}

void LossChart::addRun(qint64 runId, const QString& label) {
  if (series_.contains(runId)) return;
  const QColor color = kPalette[order_.size() % std::size(kPalette)];
  Series s;
  s.label = label;
  s.loss = new QLineSeries();
  s.loss->setName(label + tr(" loss"));
  QColor faint = color;
  faint.setAlpha(70);
  s.loss->setPen(QPen(faint, 1));
  s.smooth = new QLineSeries();
  s.smooth->setName(label + tr(" (smoothed)"));
  s.smooth->setPen(QPen(color, 2));
  s.eval = new QScatterSeries();
  s.eval->setName(label + tr(" eval"));
  s.eval->setMarkerSize(7);
  s.eval->setColor(color.darker(140));
  for (QXYSeries* xy : {static_cast<QXYSeries*>(s.loss), static_cast<QXYSeries*>(s.smooth),
                        static_cast<QXYSeries*>(s.eval)}) {
    chart()->addSeries(xy);
    connect(xy, &QXYSeries::hovered, this, [this, label = s.label](const QPointF& p, bool state) {
      if (!state) return;
      const QString text = tr("%1 — %2 %3: loss %4")
                               .arg(label, align_ == Align::Step ? tr("step") : tr("epoch"))
                               .arg(p.x(), 0, 'g', 6)
                               .arg(p.y(), 0, 'g', 5);
      QToolTip::showText(QCursor::pos(), text, this);
      emit hovered(text);
    });
  }
  if (order_.isEmpty()) {
    s.lr = new QLineSeries();
    s.lr->setName(tr("learning rate"));
    s.lr->setPen(QPen(QColor("#888888"), 1, Qt::DashLine));
    chart()->addSeries(s.lr);
  }
  series_.insert(runId, s);
  order_.append(runId);
  rebuildAxes();
}

void LossChart::clearRuns() {
  QMutexLocker lock(&mutex_);
  pending_.clear();
  chart()->removeAllSeries();
  series_.clear();
  order_.clear();
  lock.unlock();
  rebuildAxes();
}

void LossChart::setRunColor(qint64 runId, const QColor& color) {
  auto it = series_.find(runId);
  if (it == series_.end()) return;
  it->smooth->setPen(QPen(color, 2));
  QColor faint = color;
  faint.setAlpha(70);
  it->loss->setPen(QPen(faint, 1));
}

// A step seen again (its eval loss arrived later, a resumed run rewrote it) replaces its
// point; new steps keep the series in step order.
void LossChart::mergePoints(QVector<MetricPoint>& data, const QVector<MetricPoint>& incoming) {
  for (const auto& p : incoming) {
    auto at = std::lower_bound(data.begin(), data.end(), p.step,
                               [](const MetricPoint& a, qint64 step) { return a.step < step; });
    if (at != data.end() && at->step == p.step) *at = p;
    else data.insert(at, p);
  }
}

void LossChart::append(qint64 runId, const QVector<MetricPoint>& points) {
  {
    QMutexLocker lock(&mutex_);
    pending_[runId] += points;
  }
  // Whatever thread appended, the repaint is scheduled on the GUI thread.
  QMetaObject::invokeMethod(this, [this] { if (!repaint_.isActive()) repaint_.start(); }, Qt::QueuedConnection);
}

void LossChart::flush() {
  QHash<qint64, QVector<MetricPoint>> incoming;
  {
    QMutexLocker lock(&mutex_);
    incoming.swap(pending_);
  }
  if (incoming.isEmpty()) return;
  for (auto it = incoming.begin(); it != incoming.end(); ++it) {
    auto s = series_.find(it.key());
    if (s == series_.end()) continue;
    mergePoints(s->data, it.value());
    redraw(*s);
  }
  updateRanges();
  ++repaints_;
}

void LossChart::redraw(Series& s) {
  QVector<QPointF> loss, eval, lr;
  loss.reserve(s.data.size());
  for (const auto& p : s.data) {
    const double x = xOf(p);
    if (p.loss) loss.append({x, *p.loss});
    if (p.evalLoss) eval.append({x, *p.evalLoss});
    if (p.lr) lr.append({x, *p.lr});
  }
  if (logScale_) {  // a log axis cannot show zero or negative values
    auto positive = [](const QPointF& q) { return q.y() <= 0; };
    loss.erase(std::remove_if(loss.begin(), loss.end(), positive), loss.end());
    eval.erase(std::remove_if(eval.begin(), eval.end(), positive), eval.end());
  }
  s.loss->replace(decimate(loss, kMaxPlotted));
  s.smooth->replace(decimate(ema(loss, smoothing_), kMaxPlotted));
  s.eval->replace(eval);
  if (s.lr) s.lr->replace(decimate(lr, kMaxPlotted));
}

void LossChart::updateRanges() {
  double xMin = std::numeric_limits<double>::max(), xMax = std::numeric_limits<double>::lowest();
  double yMin = xMin, yMax = xMax, lrMax = 0;
  for (const auto& s : series_) {
    for (const auto& p : s.data) {
      const double x = xOf(p);
      xMin = std::min(xMin, x);
      xMax = std::max(xMax, x);
      for (const auto& v : {p.loss, p.evalLoss}) {
        if (!v || (logScale_ && *v <= 0) || !std::isfinite(*v)) continue;
        yMin = std::min(yMin, *v);
        yMax = std::max(yMax, *v);
      }
      if (p.lr) lrMax = std::max(lrMax, *p.lr);
    }
  }
  if (xMin > xMax) return;
  x_->setRange(xMin, xMax > xMin ? xMax : xMin + 1);
  if (yMin <= yMax) {
    const double pad = (yMax - yMin) * 0.05 + 1e-9;
    if (logScale_) static_cast<QLogValueAxis*>(y_)->setRange(yMin * 0.9, yMax * 1.1);
    else static_cast<QValueAxis*>(y_)->setRange(std::max(0.0, yMin - pad), yMax + pad);
  }
  yLr_->setRange(0, lrMax > 0 ? lrMax * 1.05 : 1);
}

void LossChart::rebuildAxes() {
  for (auto* a : chart()->axes()) {
    chart()->removeAxis(a);
    delete a;
  }
  x_ = new QValueAxis();
  x_->setTitleText(align_ == Align::Step ? tr("step") : tr("epoch"));
  x_->setLabelFormat(align_ == Align::Step ? "%d" : "%.2f");
  if (logScale_) {
    auto* log = new QLogValueAxis();
    log->setBase(10);
    log->setLabelFormat("%.3g");
    y_ = log;
  } else {
    auto* lin = new QValueAxis();
    lin->setLabelFormat("%.3g");
    y_ = lin;
  }
  y_->setTitleText(tr("loss"));
  yLr_ = new QValueAxis();
  yLr_->setTitleText(tr("learning rate"));
  yLr_->setLabelFormat("%.1e");
  chart()->addAxis(x_, Qt::AlignBottom);
  chart()->addAxis(y_, Qt::AlignLeft);
  chart()->addAxis(yLr_, Qt::AlignRight);
  for (auto& s : series_) {
    for (QAbstractSeries* a : {static_cast<QAbstractSeries*>(s.loss), static_cast<QAbstractSeries*>(s.smooth),
                               static_cast<QAbstractSeries*>(s.eval)}) {
      a->attachAxis(x_);
      a->attachAxis(y_);
    }
    if (s.lr) {
      s.lr->attachAxis(x_);
      s.lr->attachAxis(yLr_);
    }
    redraw(s);
  }
  yLr_->setVisible(!series_.isEmpty());
  updateRanges();
}

void LossChart::setSmoothing(double alpha) {
  smoothing_ = std::clamp(alpha, 0.0, 0.99);
  for (auto& s : series_) redraw(s);
}

void LossChart::setLogScale(bool on) {
  if (on == logScale_) return;
  logScale_ = on;
  rebuildAxes();
}

void LossChart::setAlign(Align a) {
  if (a == align_) return;
  align_ = a;
  rebuildAxes();
}

int LossChart::plottedLossPoints(qint64 runId) const {
  auto it = series_.find(runId);
  return it == series_.end() ? 0 : static_cast<int>(it->loss->count());
}

int LossChart::plottedEvalPoints(qint64 runId) const {
  auto it = series_.find(runId);
  return it == series_.end() ? 0 : int(it->eval->count());
}

int LossChart::totalLossPoints(qint64 runId) const {
  auto it = series_.find(runId);
  if (it == series_.end()) return 0;
  return static_cast<int>(std::count_if(it->data.begin(), it->data.end(), [](const MetricPoint& p) { return p.loss.has_value(); }));
}

QVector<QPointF> LossChart::plottedEma(qint64 runId) const {
  auto it = series_.find(runId);
  return it == series_.end() ? QVector<QPointF>() : it->smooth->points();
}

QVector<QPointF> LossChart::decimate(const QVector<QPointF>& points, int maxPoints) {
  if (points.size() <= maxPoints || maxPoints < 4) return points;
  // Each bucket contributes its min and max (in x order), so a spike survives.
  const int buckets = (maxPoints - 2) / 2;
  const double width = double(points.size() - 2) / buckets;
  QVector<QPointF> out;
  out.reserve(maxPoints);
  out.append(points.front());
  for (int b = 0; b < buckets; ++b) {
    const int from = 1 + int(b * width);
    const int to = std::min<int>(points.size() - 1, 1 + int((b + 1) * width));
    if (from >= to) continue;
    int lo = from, hi = from;
    for (int i = from; i < to; ++i) {
      if (points[i].y() < points[lo].y()) lo = i;
      if (points[i].y() > points[hi].y()) hi = i;
    }
    out.append(points[std::min(lo, hi)]);
    if (lo != hi) out.append(points[std::max(lo, hi)]);
  }
  out.append(points.back());
  return out;
}

QVector<QPointF> LossChart::ema(const QVector<QPointF>& points, double alpha) {
  QVector<QPointF> out;
  out.reserve(points.size());
  double s = 0;
  for (int i = 0; i < points.size(); ++i) {
    s = i == 0 ? points[i].y() : alpha * s + (1 - alpha) * points[i].y();
    out.append({points[i].x(), s});
  }
  return out;
}

}  // namespace crosslab::widgets
