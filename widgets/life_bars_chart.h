#pragma once
// Per-life stacked bars (staging / compute / debug / idle, in USD), one bar per box life
// in order of provisioning with its date and ratio under it: where the meter's money went.

#include <QtCharts/QChartView>

#include "core/ledger/lab_ledger.h"

class QBarSet;

namespace crosslab::widgets {

class LifeBarsChart : public QChartView {
  Q_OBJECT
 public:
  explicit LifeBarsChart(QWidget* parent = nullptr);

  void setLives(const std::vector<ledger::LifeRow>& lives);
  // What the chart shows, for tests and tooltips: category labels and each set's values.
  QStringList categories() const { return categories_; }
  QList<qreal> values(const QString& set) const;

 private:
  QStringList categories_;
};

}  // namespace crosslab::widgets
