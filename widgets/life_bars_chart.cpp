#include "widgets/life_bars_chart.h"

#include <QDateTime>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>

#include "core/ledger/derivation.h"
#include "core/report/svg_chart.h"

namespace crosslab::widgets {

LifeBarsChart::LifeBarsChart(QWidget* parent) : QChartView(new QChart(), parent) {
  setObjectName("lifeBars");
  setRenderHint(QPainter::Antialiasing);
  chart()->legend()->setAlignment(Qt::AlignBottom);
  chart()->setMargins(QMargins(4, 4, 4, 4));
  setMinimumHeight(220);
}

void LifeBarsChart::setLives(const std::vector<ledger::LifeRow>& lives) {
  QChart* c = chart();
  c->removeAllSeries();
  for (auto* axis : c->axes()) {
    c->removeAxis(axis);
    delete axis;
  }
  categories_.clear();
  // The report's palette: compute blue, debug red, staging amber, idle grey.
  const auto& palette = report::chartPalette();
  struct Part {
    const char* name;
    const char* color;
    double ledger::Split::*field;
  };
  const Part parts[] = {{"staging", palette[4], &ledger::Split::staging},
                        {"compute", palette[0], &ledger::Split::compute},
                        {"debug", palette[1], &ledger::Split::debug},
                        {"idle", palette[5], &ledger::Split::idle}};
  auto* series = new QStackedBarSeries();
  QMap<QString, int> lifeNo;
  double top = 0;
  for (const auto& row : lives) {
    const QString box = QString::fromStdString(row.life.box);
    const auto when = QDateTime::fromSecsSinceEpoch(static_cast<qint64>(row.life.provisioned), Qt::UTC);
    // One line (the axis shows no line breaks): date, life, ratio.
    categories_ << QString("%1 %2 #%3 · %4")
                       .arg(when.toString("MM-dd"), box)
                       .arg(++lifeNo[box])
                       .arg(QString::fromStdString(ledger::formatRatio(row.ledger.ratio)));
    top = std::max(top, row.ledger.usd.billed);
  }
  for (const auto& p : parts) {
    auto* set = new QBarSet(QString::fromLatin1(p.name));
    set->setColor(QColor(p.color));
    set->setBorderColor(QColor(p.color));
    for (const auto& row : lives) *set << row.ledger.usd.*(p.field);
    series->append(set);
  }
  c->addSeries(series);
  auto* x = new QBarCategoryAxis();
  x->append(categories_);
  x->setObjectName("lifeAxis");
  auto* y = new QValueAxis();
  y->setTitleText(tr("USD"));
  y->setRange(0, top > 0 ? top * 1.1 : 1.0);
  y->setLabelFormat("%.2f");
  y->applyNiceNumbers();
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  c->setTitle(lives.empty() ? tr("No box lives yet") : tr("Where each life's money went"));
}

QList<qreal> LifeBarsChart::values(const QString& name) const {
  for (auto* s : chart()->series())
    if (auto* bars = qobject_cast<QStackedBarSeries*>(s))
      for (auto* set : bars->barSets())
        if (set->label() == name) {
          QList<qreal> out;
          for (int i = 0; i < set->count(); ++i) out << set->at(i);
          return out;
        }
  return {};
}

}  // namespace crosslab::widgets
