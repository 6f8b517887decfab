#include "widgets/loss_chart.h"

#include <QGraphicsLayout>
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
  s.loss->setName(label + tr(" loss (raw)"));
  QColor faint = color;
  faint.setAlpha(70);
  s.loss->setPen(QPen(faint, 1));
  s.smooth = new QLineSeries();
  s.smooth->setName(label);
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
  updateLegend();
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
  updateLegend();
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
  s.smooth->replace(decimate(ema(loss, effectiveSmoothing(loss.size())), kMaxPlotted));
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
  // x: whole steps, a little room either side of a lone point, ticks at a nice interval.
  const bool steps = align_ == Align::Step;
  if (xMax - xMin < (steps ? 1.0 : 1e-9)) {
    xMin -= steps ? 1 : 0.5;
    xMax += steps ? 1 : 0.5;
    if (xMin < 0) xMax -= xMin, xMin = 0;  // steps and epochs start at 0
  }
  const double xStep = tickInterval(xMax - xMin, 5, steps);
  x_->setTickType(QValueAxis::TicksDynamic);
  x_->setTickAnchor(0);
  x_->setTickInterval(xStep);
  x_->setRange(xMin, xMax);
  if (yMin <= yMax) {
    if (logScale_) {
      auto* log = static_cast<QLogValueAxis*>(y_);
      const double lo = yMin * 0.9, hi = yMax * 1.1;
      log->setBase(logBase(lo, hi));
      log->setRange(lo, hi);
    } else {
      // A lone value (or a flat line) gets room around it, not a range of 2e-9.
      const double pad = std::max((yMax - yMin) * 0.05, std::max(std::abs(yMax) * 0.1, 1e-3));
      auto* lin = static_cast<QValueAxis*>(y_);
      lin->setRange(std::max(0.0, yMin - pad), yMax + pad);
      lin->applyNiceNumbers();
    }
  }
  yLr_->setRange(0, lrMax > 0 ? lrMax * 1.05 : 1);
}

double LossChart::effectiveSmoothing(int points) const {
  // EMA weight alpha averages over ~1/(1-alpha) points; cap that window at a tenth of the
  // run, so that maximum smoothing on a 100-step run is a trend, not the first loss held up.
  const double window = std::max(2.0, points / 10.0);
  return std::min(smoothing_, 1.0 - 1.0 / window);
}

double LossChart::tickInterval(double span, int ticks, bool integer) {
  if (!(span > 0)) return 1;
  const double raw = span / std::max(ticks, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag * 10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  return integer ? std::max(1.0, std::round(step)) : step;
}

double LossChart::logBase(double lo, double hi) {
  if (!(lo > 0) || !(hi > lo)) return 10;
  // Major ticks fall on whole powers of the base: pick the coarsest base with >= 3 of them.
  for (double base : {10.0, 2.0, std::sqrt(2.0), std::pow(2.0, 0.25), std::pow(2.0, 0.125), std::pow(2.0, 1.0 / 16)}) {
    const double first = std::ceil(std::log(lo) / std::log(base) - 1e-9), last = std::floor(std::log(hi) / std::log(base) + 1e-9);
    if (last - first + 1 >= 3) return base;
  }
  return std::pow(2.0, 1.0 / 32);
}

QStringList LossChart::legendNames(const QStringList& labels, int maxChars) {
  const QString ellipsis(QChar(0x2026));
  QStringList out;
  for (int i = 0; i < labels.size(); ++i) {
    const QString& l = labels[i];
    int differ = 0;  // where this label first differs from the others
    for (int j = 0; j < labels.size(); ++j) {
      if (j == i) continue;
      int k = 0;
      while (k < l.size() && k < labels[j].size() && l[k] == labels[j][k]) ++k;
      differ = std::max(differ, k);
    }
    QString name = l;
    if (labels.size() > 1 && differ > 4) {
      // Runs compared together: the prefix they share is the same for all; keep what differs
      // ("lora-20261130-223344" and "…-223512" -> "…223344", "…223512"), at least 6 characters.
      const int from = std::max(0, std::min<int>(differ, int(l.size()) - 6));
      if (from > 1) name = ellipsis + l.mid(from);
    }
    if (name.size() > maxChars) name = name.left(maxChars / 2) + ellipsis + name.right(maxChars - maxChars / 2 - 1);
    out << name;
  }
  for (int i = 0; i < out.size(); ++i)  // still equal (labels that differ only where they were cut): number them
    for (int j = i + 1; j < out.size(); ++j)
      if (out[i] == out[j]) out[j] += QString(" #%1").arg(j + 1);
  return out;
}

// One legend entry per run (its smoothed curve, named so that runs can be told apart) and
// an eval entry only for a run that has eval loss. The learning rate is named by its axis
// (and dashed), so its entry would only take room the run names need.
void LossChart::updateLegend() {
  QStringList labels;
  for (qint64 id : order_) labels << series_[id].label;
  const QStringList names = legendNames(labels);
  auto* legend = chart()->legend();
  legend->setShowToolTips(true);
  for (int i = 0; i < order_.size(); ++i) {
    Series& s = series_[order_[i]];
    s.smooth->setName(names[i]);
    s.eval->setName(names[i] + tr(" eval"));
    const bool hasEval = std::any_of(s.data.begin(), s.data.end(), [](const MetricPoint& p) { return p.evalLoss.has_value(); });
    for (auto* m : legend->markers(s.loss)) m->setVisible(false);  // faint raw line: same colour as its smoothed one
    for (auto* m : legend->markers(s.eval)) m->setVisible(hasEval);
    if (s.lr)
      for (auto* m : legend->markers(s.lr)) m->setVisible(false);
  }
  // A marker's visibility does not lay the legend out again: an entry shown after it was
  // laid out hidden (eval loss arriving later) would keep the empty text it was cut to.
  if (legend->layout()) legend->layout()->invalidate();
}

QStringList LossChart::legendLabels() const {
  QStringList out;
  for (auto* m : chart()->legend()->markers())
    if (m->isVisible()) out << m->label();
  return out;
}

QPointF LossChart::xRange() const { return {x_->min(), x_->max()}; }

QPointF LossChart::yRange() const {
  if (logScale_) return {static_cast<QLogValueAxis*>(y_)->min(), static_cast<QLogValueAxis*>(y_)->max()};
  return {static_cast<QValueAxis*>(y_)->min(), static_cast<QValueAxis*>(y_)->max()};
}

namespace {

// `v` as an axis with printf-style label format "%d", "%.Nf" or "%.Ng" draws it.
QString formatLike(const QString& format, double v) {
  if (format == "%d") return QString::number(std::llround(v));
  const int precision = format.mid(2, format.size() - 3).toInt();
  return QString::number(v, format.endsWith('f') ? 'f' : 'g', precision > 0 ? precision : 6);
}

// The labels a value axis draws from `first`, every `step`, up to `max`, in `format`.
QStringList ticks(double first, double step, double max, const QString& format) {
  QStringList out;
  for (double v = first; v <= max + step * 1e-6 && out.size() < 200; v += step)
    out << formatLike(format, std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

}  // namespace

QStringList LossChart::yTickLabels() const {
  if (logScale_) {
    auto* log = static_cast<QLogValueAxis*>(y_);
    QStringList out;
    const double b = log->base();
    for (double e = std::ceil(std::log(log->min()) / std::log(b) - 1e-9); std::pow(b, e) <= log->max() * (1 + 1e-9); e += 1)
      out << formatLike(log->labelFormat(), std::pow(b, e));
    return out;
  }
  auto* lin = static_cast<QValueAxis*>(y_);
  const int n = lin->tickCount();
  return ticks(lin->min(), (lin->max() - lin->min()) / std::max(n - 1, 1), lin->max(), lin->labelFormat());
}

QStringList LossChart::xTickLabels() const {
  const double step = x_->tickInterval();
  return ticks(std::ceil(x_->min() / step - 1e-9) * step, step, x_->max(), x_->labelFormat());
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
  yLr_->setLabelFormat("%.0e");  // "3e-03": short enough for a narrow chart
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
  double m = 0, weight = 0;  // weight = 1 - alpha^(i+1), kept as a running sum to stay exact at alpha 0
  for (const QPointF& p : points) {
    m = alpha * m + (1 - alpha) * p.y();
    weight = alpha * weight + (1 - alpha);
    out.append({p.x(), weight > 0 ? m / weight : p.y()});
  }
  return out;
}

}  // namespace crosslab::widgets
