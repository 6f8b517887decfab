#pragma once
// The live chart of a running sweep: aggregate and per-stream output tok/s over time
// (left axis), each level's measured aggregate when it ends (the figure the table gets:
// a fast server can finish a level between two live ticks, or stream in bursts that the
// live window never sees), and each request's TTFT as it completes (right axis, ms). The
// axes follow every point plotted. Points are
// buffered; a single-shot timer coalesces repaints to ≤ 25/s, series are updated with
// replace(), and old points are decimated so a long sweep stays cheap to draw.

#include <QChartView>
#include <QVector>

class QLineSeries;
class QScatterSeries;
class QValueAxis;
class QTimer;

namespace crosslab::widgets {

class BenchLiveChart : public QChartView {
  Q_OBJECT
 public:
  static constexpr int kMaxPoints = 1500;  // per series, after decimation
  static constexpr int kRepaintMs = 40;    // ≤ 25 repaints per second

  explicit BenchLiveChart(QWidget* parent = nullptr);

  void clear();
  void addRates(double t, double aggregateTokS, double perStreamTokS);
  void addTtft(double t, double ttftMs);
  // A finished level's measured aggregate output tok/s, at the time it ended.
  void addLevel(double t, double aggregateTokS);

  int aggregatePoints() const;
  int ttftPoints() const;
  // What the user sees: the tok/s axis' range and the highest rate plotted.
  QPointF rateAxisRange() const;
  double maxPlottedRate() const;
  int flushCount() const { return flushes_; }

 private:
  void scheduleFlush();
  void flush();
  static void decimate(QVector<QPointF>& points);
  static void decimateOnce(QVector<QPointF>& points);

  QLineSeries* aggregate_;
  QLineSeries* perStream_;
  QScatterSeries* ttft_;
  QScatterSeries* levels_;
  QValueAxis* axisT_;
  QValueAxis* axisRate_;
  QValueAxis* axisMs_;
  QTimer* timer_;
  QVector<QPointF> aggPts_, perPts_, ttftPts_, levelPts_;
  int flushes_ = 0;
};

}  // namespace crosslab::widgets
