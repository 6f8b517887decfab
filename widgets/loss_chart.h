#pragma once
// A live training-curve chart: loss (raw and EMA-smoothed), learning rate on a second
// axis, eval-loss points; several runs overlaid for comparison, aligned by step or epoch.
//
// Built to stay smooth while a run streams in (PlotJuggler's recipe): producers call
// append() from any thread, which only pushes under a short lock; a single-shot timer on
// the GUI thread coalesces repaints to at most 25 per second, moves the data out, and
// updates each series with replace(); above kMaxPlotted points a series is decimated
// (min/max per bucket, so spikes stay visible).

#include <QChartView>
#include <QHash>
#include <QMutex>
#include <QPointF>
#include <QTimer>
#include <QVector>
#include <optional>

class QLineSeries;
class QScatterSeries;
class QAbstractAxis;
class QValueAxis;

namespace crosslab::widgets {

struct MetricPoint {
  qint64 step = 0;
  double epoch = 0;
  std::optional<double> loss, lr, evalLoss;
};

class LossChart : public QChartView {
  Q_OBJECT
 public:
  static constexpr int kMaxPlotted = 2000;   // points per series after decimation
  static constexpr int kRepaintMs = 40;      // ≤ 25 repaints per second

  enum class Align { Step, Epoch };

  explicit LossChart(QWidget* parent = nullptr);

  // Adds a run to the chart (the first one also shows its learning rate).
  void addRun(qint64 runId, const QString& label);
  void clearRuns();
  QList<qint64> runs() const { return order_; }

  // Thread-safe: queue points for `runId`; they show at the next coalesced repaint.
  void append(qint64 runId, const QVector<MetricPoint>& points);
  // Applies everything queued now (the timer does this; tests call it directly).
  void flush();

  void setSmoothing(double alpha);  // EMA weight of history, 0 (raw) … 0.99
  double smoothing() const { return smoothing_; }
  // The weight used on a curve of `points` points: the slider's, capped so that the EMA
  // spans at most a tenth of the curve (max(2, points/10) points).
  double effectiveSmoothing(int points) const;
  void setLogScale(bool on);
  bool logScale() const { return logScale_; }
  void setAlign(Align a);
  void setRunColor(qint64 runId, const QColor& color);

  // For tests and the hover read-out.
  int plottedLossPoints(qint64 runId) const;
  int totalLossPoints(qint64 runId) const;
  int plottedEvalPoints(qint64 runId) const;
  QVector<QPointF> plottedEma(qint64 runId) const;
  int repaintCount() const { return repaints_; }

  // Merges points by step: a step already there is replaced, a new one inserted in order.
  static void mergePoints(QVector<MetricPoint>& data, const QVector<MetricPoint>& incoming);
  // min/max-per-bucket decimation that keeps the first and last points.
  static QVector<QPointF> decimate(const QVector<QPointF>& points, int maxPoints);
  // Debiased EMA as TensorBoard draws it: m_i = a·m_{i-1} + (1-a)·y_i (m_{-1} = 0),
  // s_i = m_i / (1 - a^(i+1)). Each s_i is a weighted mean of y_0..y_i with weights that
  // sum to 1, so the curve stays inside the data it smooths and the first point does
  // not hold it up at any smoothing.
  static QVector<QPointF> ema(const QVector<QPointF>& points, double alpha);
  // Legend names for runs compared together: short enough not to be cut by the legend,
  // and distinct: the prefix they share is folded to "…" ("…223344", "…223512"); a name
  // still longer than maxChars loses its middle.
  static QStringList legendNames(const QStringList& labels, int maxChars = 18);
  // Log-axis base giving at least three labelled ticks between lo and hi (> 0): 10 when
  // the data spans decades, else 2, √2, 2^¼ … as the span narrows.
  static double logBase(double lo, double hi);
  // A "nice" tick interval (1, 2 or 5 × 10^k) giving about `ticks` ticks over `span`;
  // whole numbers when `integer` (steps).
  static double tickInterval(double span, int ticks, bool integer);

  // What the chart shows (for tests of the journey and the hover read-out).
  QStringList legendLabels() const;  // the visible legend entries, in order
  QPointF xRange() const;
  QPointF yRange() const;
  QStringList yTickLabels() const;  // the left axis' labels as drawn (log: its major ticks)
  QStringList xTickLabels() const;

 signals:
  void hovered(const QString& text);

 private:
  struct Series {
    QString label;
    QVector<MetricPoint> data;  // full resolution, in arrival order
    QLineSeries* loss = nullptr;
    QLineSeries* smooth = nullptr;
    QScatterSeries* eval = nullptr;
    QLineSeries* lr = nullptr;
  };

  void rebuildAxes();
  void redraw(Series& s);
  void updateRanges();
  void updateLegend();
  double xOf(const MetricPoint& p) const { return align_ == Align::Step ? double(p.step) : p.epoch; }

  QMutex mutex_;
  QHash<qint64, QVector<MetricPoint>> pending_;
  QHash<qint64, Series> series_;
  QList<qint64> order_;
  QTimer repaint_;
  QValueAxis* x_ = nullptr;
  QAbstractAxis* y_ = nullptr;
  QValueAxis* yLr_ = nullptr;
  double smoothing_ = 0.6;
  bool logScale_ = false;
  Align align_ = Align::Step;
  int repaints_ = 0;
};

}  // namespace crosslab::widgets
