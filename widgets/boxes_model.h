#pragma once
// Box lives as a table with their live meter: state, address, uptime, running cost, and
// idle time (rows idle past the threshold are flagged). `tick(now)` refreshes the
// time-dependent columns without re-reading the lab.

#include <QAbstractTableModel>
#include <vector>

#include "core/venues/venue_store.h"

namespace crosslab::widgets {

class BoxesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, State, Address, Gpus, Uptime, Cost, Idle, ColumnCount };
  struct Row {
    venues::BoxRow box;
    venues::MeterReading meter;
    double idleSeconds = 0;
    double lastActivity = 0;  // epoch seconds of the last run, transfer or command (idle clock)
  };
  using QAbstractTableModel::QAbstractTableModel;

  void setRows(std::vector<Row> rows);
  // The time-dependent columns (uptime, cost, idle) at `nowEpoch`, from the rows held.
  void tick(double nowEpoch);
  const Row& row(int r) const { return rows_.at(static_cast<size_t>(r)); }
  double totalCost() const;
  double activeCost() const;  // lives still running
  void setIdleThresholdSeconds(double s);
  int idleCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  // Idle and still billing: an unpriced box (a workstation) costs nothing while idle.
  bool isIdle(const Row& r) const { return r.box.billing() && r.idleSeconds > idleThreshold_; }
  std::vector<Row> rows_;
  double idleThreshold_ = 30 * 60;
};

// "1 h 05 m", "42 s"
QString formatDuration(double seconds);

}  // namespace crosslab::widgets
