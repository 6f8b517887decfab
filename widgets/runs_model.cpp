#include "widgets/runs_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QFont>
#include <spdlog/spdlog.h>

#include "backends/lab_session.h"

namespace crosslab::widgets {

RunsModel::RunsModel(backends::LabSession* session, QObject* parent) : QAbstractTableModel(parent), session_(session) {
  connect(session_, &backends::LabSession::labChanged, this, &RunsModel::refresh);
  connect(session_, &backends::LabSession::labDataChanged, this, &RunsModel::refresh);
  refresh();
}

void RunsModel::refresh() {
  std::vector<store::RunSummary> fresh;
  if (session_->isOpen()) {
    try {
      fresh = session_->store()->runs().list();
    } catch (const std::exception& e) {
      spdlog::warn("runs list: {}", e.what());
      return;  // keep what we had rather than blanking the list on a transient error
    }
  }
  // Same runs in the same order: update cells in place so selection and scroll stay put.
  const bool sameRows = fresh.size() == runs_.size() &&
                        std::equal(fresh.begin(), fresh.end(), runs_.begin(),
                                   [](const auto& a, const auto& b) { return a.id == b.id; });
  if (sameRows) {
    runs_ = std::move(fresh);
    if (!runs_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    return;
  }
  beginResetModel();
  runs_ = std::move(fresh);
  endResetModel();
}

int RunsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(runs_.size()); }
int RunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

const store::RunSummary* RunsModel::run(int row) const {
  return row >= 0 && row < int(runs_.size()) ? &runs_[size_t(row)] : nullptr;
}

int RunsModel::rowOfRun(qint64 runId) const {
  for (size_t i = 0; i < runs_.size(); ++i)
    if (runs_[i].id == runId) return int(i);
  return -1;
}

qint64 RunsModel::durationSeconds(const store::RunSummary& r) {
  const auto start = QDateTime::fromString(QString::fromStdString(r.startedAt), Qt::ISODate);
  if (!start.isValid()) return -1;
  const auto end = r.endedAt.empty() ? QDateTime::currentDateTimeUtc()
                                     : QDateTime::fromString(QString::fromStdString(r.endedAt), Qt::ISODate);
  return end.isValid() ? start.secsTo(end) : -1;
}

QString RunsModel::formatDuration(qint64 s) {
  if (s < 0) return QStringLiteral("—");
  if (s < 3600) return QString("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
  return QString("%1:%2:%3").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'));
}

QColor RunsModel::statusColor(const QString& status) {
  if (status == "failed") return QColor("#d32f2f");
  if (status == "stalled") return QColor("#e65100");
  if (status == "running") return QColor("#1e6fd9");
  return {};
}

QVariant RunsModel::data(const QModelIndex& index, int role) const {
  const auto* r = run(index.row());
  if (!r) return {};
  const QString status = QString::fromStdString(r->status);
  switch (role) {
    case RunIdRole: return QVariant::fromValue<qint64>(r->id);
    case StatusRole: return status;
    case Qt::ForegroundRole: {
      const QColor c = statusColor(status);
      return c.isValid() && (index.column() == Status || status == "failed" || status == "stalled") ? QBrush(c) : QVariant();
    }
    case Qt::FontRole:
      if (index.column() == Status && (status == "failed" || status == "stalled")) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ToolTipRole:
      if (index.column() == Model) return QString::fromStdString(r->model);  // the whole path
      return r->statusReason.empty() ? QVariant() : QString::fromStdString(r->status + ": " + r->statusReason);
    case Qt::TextAlignmentRole:
      return index.column() >= Steps ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DisplayRole:
    case Qt::EditRole: break;
    default: return {};
  }
  const bool sortKey = role == Qt::EditRole;  // the proxy sorts on numbers, not on text
  switch (index.column()) {
    case Name: return QString::fromStdString(r->name);
    case Model: {  // a model folder by its name (the whole path in the tooltip): the status stays in view
      const QString m = QString::fromStdString(r->model);
      if (sortKey || !m.contains('/')) return m;
      const QString name = QFileInfo(QDir::cleanPath(m)).fileName();
      return name.isEmpty() ? m : name;
    }
    case Venue: return QString::fromStdString(r->venue);
    case Status: return status;
    case Steps:
      if (sortKey) return QVariant::fromValue<qint64>(r->lastStep.value_or(0));
      return QString("%1 / %2").arg(r->lastStep ? QString::number(*r->lastStep) : "0",
                                    r->totalSteps ? QString::number(*r->totalSteps) : "?");
    case FinalLoss:
      if (!r->lastLoss) return sortKey ? QVariant(0.0) : QVariant(QStringLiteral("—"));
      return sortKey ? QVariant(*r->lastLoss) : QVariant(QString::number(*r->lastLoss, 'f', 4));
    case Duration: {
      const qint64 d = durationSeconds(*r);
      return sortKey ? QVariant(d) : QVariant(formatDuration(d));
    }
    case TokensPerSecond:
      if (!r->tokensPerSecond) return sortKey ? QVariant(0.0) : QVariant(QStringLiteral("—"));
      return sortKey ? QVariant(*r->tokensPerSecond) : QVariant(QString::number(*r->tokensPerSecond, 'f', 0));
    default: return {};
  }
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Name", "Model", "Venue", "Status", "Steps", "Final loss", "Duration", "Tokens/s"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace crosslab::widgets
