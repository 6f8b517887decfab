#pragma once
// The lab's serving table as a model: one row per benchmark (venue / method), columns
// status, 1-stream, one per concurrency level (output tok/s, aggregate), best aggregate
// (with its level), $ per million output tokens at that level, and notes (a collapse, or
// why the sweep failed). A failed sweep shows as failed with its error and no figures.
// Read from the lab store; exported as JSON, or as CSV whose figure cells hold plain
// numbers (the level of the best aggregate and the collapse in their own columns).

#include <QAbstractTableModel>
#include <QJsonArray>
#include <vector>

#include "core/bench/bench_store.h"

namespace crosslab::widgets {

class BenchResultsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit BenchResultsModel(QObject* parent = nullptr);

  void setBenchmarks(std::vector<bench::StoredBenchmark> benchmarks);
  const std::vector<bench::StoredBenchmark>& benchmarks() const { return rows_; }
  const std::vector<int>& levels() const { return levels_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Output tok/s of `row` at `concurrency`, or a negative value when it did not run.
  double throughputAt(int row, int concurrency) const;
  QString toCsv() const;
  QJsonArray toJson() const;

 private:
  enum Fixed { Label = 0, Status = 1, OneStream = 2, FirstLevel = 3 };
  int bestColumn() const { return FirstLevel + static_cast<int>(levels_.size()); }
  QString cellText(int row, int column) const;
  QString statusText(int row) const;
  const bench::StoredLevel* best(int row) const;
  const bench::StoredLevel* levelAt(int row, int concurrency) const;

  std::vector<bench::StoredBenchmark> rows_;
  std::vector<int> levels_;  // union of every benchmark's levels, ascending
};

}  // namespace crosslab::widgets
