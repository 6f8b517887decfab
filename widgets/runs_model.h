#pragma once
// The Training panel's run list: one row per training run in the lab store. Rows change
// only through refresh(), which reloads from the store and keeps row identity by run id.

#include <QAbstractTableModel>
#include <vector>

#include "core/store/lab_store.h"

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class RunsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Model, Venue, Status, Steps, FinalLoss, Duration, TokensPerSecond, ColumnCount };
  static constexpr int RunIdRole = Qt::UserRole + 1;
  static constexpr int StatusRole = Qt::UserRole + 2;

  explicit RunsModel(backends::LabSession* session, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  const store::RunSummary* run(int row) const;
  int rowOfRun(qint64 runId) const;

  // Seconds from start to end (or to now while running); -1 when unknown.
  static qint64 durationSeconds(const store::RunSummary& r);
  static QString formatDuration(qint64 seconds);
  static QColor statusColor(const QString& status);

 public slots:
  void refresh();

 private:
  backends::LabSession* session_;
  std::vector<store::RunSummary> runs_;
};

}  // namespace crosslab::widgets
