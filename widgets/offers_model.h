#pragma once
// Provider offers as a table: GPU, count, vCPU, RAM, disk, $/h, $/GPU-hour, minimum.
// Sort role = the raw number, so a proxy sorts $/GPU-hour numerically.

#include <QAbstractTableModel>
#include <vector>

#include "backends/providers/hotaisle_client.h"

namespace crosslab::widgets {

class OffersModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Gpu, Count, Vcpus, RamGb, DiskGb, PerHour, PerGpuHour, MinMinutes, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setOffers(std::vector<providers::Offer> offers);
  const providers::Offer& offer(int row) const { return offers_.at(static_cast<size_t>(row)); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<providers::Offer> offers_;
};

}  // namespace crosslab::widgets
