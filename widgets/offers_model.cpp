#include "widgets/offers_model.h"

namespace crosslab::widgets {

void OffersModel::setOffers(std::vector<providers::Offer> offers) {
  beginResetModel();
  offers_ = std::move(offers);
  endResetModel();
}

int OffersModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(offers_.size());
}

int OffersModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant OffersModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || (role != Qt::DisplayRole && role != Qt::UserRole)) return {};
  const auto& o = offers_.at(static_cast<size_t>(index.row()));
  const bool raw = role == Qt::UserRole;
  switch (index.column()) {
    case Gpu: return QString::fromStdString(o.gpuModel);
    case Count: return o.gpuCount;
    case Vcpus: return o.vcpus;
    case RamGb: return raw ? QVariant(o.ramGb) : QVariant(QString::number(o.ramGb, 'f', 0));
    case DiskGb: return raw ? QVariant(o.diskGb) : QVariant(QString::number(o.diskGb, 'f', 0));
    case PerHour: return raw ? QVariant(o.pricePerHour) : QVariant(QString("$%1").arg(o.pricePerHour, 0, 'f', 2));
    case PerGpuHour:
      return raw ? QVariant(o.pricePerGpuHour()) : QVariant(QString("$%1").arg(o.pricePerGpuHour(), 0, 'f', 2));
    case MinMinutes: return o.minMinutes;
    default: return {};
  }
}

QVariant OffersModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"GPU", "GPUs", "vCPU", "RAM GB", "Disk GB", "$/h", "$/GPU-h", "Min. minutes"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace crosslab::widgets
