#include "widgets/boxes_model.h"

#include <QBrush>
#include <QColor>

#include <algorithm>

namespace crosslab::widgets {

QString formatDuration(double seconds) {
  const auto s = static_cast<long long>(seconds);
  if (s < 60) return QString("%1 s").arg(s);
  if (s < 3600) return QString("%1 m %2 s").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
  return QString("%1 h %2 m").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0'));
}

void BoxesModel::setRows(std::vector<Row> rows) {
  const bool same = rows.size() == rows_.size() &&
                    std::equal(rows.begin(), rows.end(), rows_.begin(),
                               [](const Row& a, const Row& b) { return a.box.id == b.box.id; });
  if (same) {  // same box lives: update in place, keep the selection
    rows_ = std::move(rows);
    if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    return;
  }
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void BoxesModel::tick(double nowEpoch) {
  for (auto& r : rows_) {
    r.meter = venues::lifeMeter(r.box, nowEpoch);
    if (r.box.active()) r.idleSeconds = std::max(0.0, nowEpoch - r.lastActivity);
  }
  if (!rows_.empty()) emit dataChanged(index(0, Uptime), index(rowCount() - 1, Idle));
}

double BoxesModel::totalCost() const {
  double t = 0;
  for (const auto& r : rows_) t += r.meter.usd;
  return t;
}

double BoxesModel::activeCost() const {
  double t = 0;
  for (const auto& r : rows_)
    if (r.box.active()) t += r.meter.usd;
  return t;
}

void BoxesModel::setIdleThresholdSeconds(double s) {
  idleThreshold_ = s;
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int BoxesModel::idleCount() const {
  int n = 0;
  for (const auto& r : rows_) n += isIdle(r);
  return n;
}

int BoxesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BoxesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BoxesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Row& r = rows_.at(static_cast<size_t>(index.row()));
  if (role == Qt::BackgroundRole && isIdle(r)) return QBrush(QColor(255, 200, 0, 60));
  if (role == Qt::ForegroundRole && !r.box.active()) return QBrush(QColor(128, 128, 128));
  if (role == Qt::ToolTipRole && !r.box.active())
    return tr("Ended %1; this life cost $%2").arg(QString::fromStdString(r.box.deletedAt)).arg(r.meter.usd, 0, 'f', 2);
  if (role == Qt::ToolTipRole && isIdle(r))
    return tr("Idle for %1: no run or transfer, still billing").arg(formatDuration(r.idleSeconds));
  if (role != Qt::DisplayRole) return {};
  const auto& b = r.box;
  switch (index.column()) {
    case Name: return QString::fromStdString(b.name);
    case State: return QString::fromStdString(b.state);
    case Address: return QString::fromStdString(b.user + "@" + b.host + ":" + std::to_string(b.port));
    case Gpus: return b.gpuCount ? QString("%1× %2").arg(b.gpuCount).arg(QString::fromStdString(b.gpuModel)) : QString();
    case Uptime: return formatDuration(r.meter.elapsedHours * 3600);
    case Cost: return b.pricePerHour ? QString("$%1").arg(r.meter.usd, 0, 'f', 2) : QString("—");
    case Idle: return b.active() ? formatDuration(r.idleSeconds) : QString();
    default: return {};
  }
}

QVariant BoxesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Box", "State", "Address", "GPUs", "Uptime", "Cost", "Idle"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace crosslab::widgets
