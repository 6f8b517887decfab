// BenchmarksPanel's lower half: the lab's results table, the comparison of the rows selected in
// it (the "Compare rows" tab) and the table's export. The form, the local server and the sweep
// are in benchmarks_panel.cpp.
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonDocument>
#include <QPushButton>
#include <QSaveFile>
#include <QTabWidget>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>

#include "backends/bench/bench_process.h"
#include "backends/lab_session.h"
#include "core/bench/bench_store.h"
#include "widgets/bench_results_model.h"
#include "widgets/benchmarks_panel.h"
#include "widgets/file_dialogs.h"

namespace crosslab::widgets {

namespace {

// Writes through a temporary file: a failed export leaves no half-written file.
bool saveAtomically(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() && f.commit()) return true;
  if (error) *error = f.errorString();
  return false;
}

}  // namespace

QWidget* BenchmarksPanel::buildResults() {
  auto* box = new QWidget(this);
  results_ = new BenchResultsModel(this);
  table_ = new QTableView(box);
  table_->setObjectName("resultsTable");
  table_->setModel(results_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    updateComparison();
    // Rows the user selects are shown compared, unless a sweep is being watched live.
    if (!restoringSelection_ && bars_->count() > 0 && !process_->isRunning()) charts_->setCurrentWidget(compare_);
  });
  connect(results_, &QAbstractItemModel::modelReset, this, &BenchmarksPanel::updateComparison);

  auto* csv = new QPushButton(tr("Export CSV…"), box);
  csv->setObjectName("exportCsv");
  auto* json = new QPushButton(tr("Export JSON…"), box);
  json->setObjectName("exportJson");
  connect(csv, &QPushButton::clicked, this, [this] { exportWithDialog(false); });
  connect(json, &QPushButton::clicked, this, [this] { exportWithDialog(true); });
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(csv);
  buttons->addWidget(json);

  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(table_);
  v->addLayout(buttons);
  return box;
}

QWidget* BenchmarksPanel::buildComparison(QWidget* parent) {
  bars_ = new QBarSeries;
  compare_ = new QChartView(parent);
  compare_->setObjectName("compareChart");
  compare_->chart()->addSeries(bars_);
  compare_->chart()->setTitle(tr("Output tok/s at each concurrency level, selected rows"));
  compare_->chart()->legend()->setAlignment(Qt::AlignBottom);
  compare_->setToolTip(tr("Select rows of the table to compare their output tok/s per level"));
  compare_->setMinimumHeight(160);
  return compare_;
}

void BenchmarksPanel::reload() {
  // A reload that adds a row or a level resets the model, and with it the selection.
  std::set<std::int64_t> selected;
  if (!labOpened_)
    for (const auto& index : table_->selectionModel()->selectedRows())
      selected.insert(results_->benchmarks()[size_t(index.row())].id);
  else
    results_->setBenchmarks({});  // another lab's rows: nothing of theirs stays, whatever their shape
  std::vector<bench::StoredBenchmark> rows;
  if (session_->isOpen() && session_->store()) rows = bench::BenchStore(*session_->store()).list();
  results_->setBenchmarks(std::move(rows));
  restoreSelection(selected);
}

void BenchmarksPanel::restoreSelection(const std::set<std::int64_t>& selectedBefore) {
  const auto& rows = results_->benchmarks();
  QItemSelection keep;
  const auto add = [&](int row) {
    keep.select(results_->index(row, 0), results_->index(row, results_->columnCount() - 1));
  };
  const auto measured = [](const bench::StoredBenchmark& b) {
    return std::any_of(b.levels.begin(), b.levels.end(), [](const auto& l) { return l.completed > 0; });
  };
  for (int row = 0; row < int(rows.size()); ++row) {
    const auto& b = rows[size_t(row)];
    // new: a sweep under way (its levels to come) or one with figures; not a sweep that failed
    const bool fresh = !labOpened_ && !knownBenchmarks_.count(b.id) &&
                       (b.status == bench::SweepStatus::Running || measured(b));
    if (selectedBefore.count(b.id) || fresh) add(row);
  }
  if (labOpened_ && keep.isEmpty()) {  // the newest with figures (rows come oldest first)
    int picked = 0;
    for (int row = int(rows.size()) - 1; row >= 0 && picked < kCompareOnOpen; --row) {
      if (!measured(rows[size_t(row)])) continue;
      add(row);
      ++picked;
    }
  }
  const bool opened = labOpened_;
  knownBenchmarks_.clear();
  for (const auto& b : rows) knownBenchmarks_.insert(b.id);
  labOpened_ = false;
  restoringSelection_ = true;
  table_->selectionModel()->select(keep, QItemSelectionModel::ClearAndSelect);
  restoringSelection_ = false;
  updateComparison();  // also when the selection did not change but its rows' figures did
  if (opened && !keep.isEmpty() && !process_->isRunning()) charts_->setCurrentWidget(compare_);
}

void BenchmarksPanel::updateComparison() {
  auto* chart = compare_->chart();
  bars_->clear();
  for (auto* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  QStringList categories;
  for (int c : results_->levels()) categories << QString("c=%1").arg(c);
  double top = 1;
  QModelIndexList selected = table_->selectionModel()->selectedRows();
  std::sort(selected.begin(), selected.end());  // the table's order, whatever order they were picked in
  for (const auto& index : selected) {
    auto* set = new QBarSet(results_->data(results_->index(index.row(), 0)).toString());
    for (int c : results_->levels()) {
      const double v = std::max(0.0, results_->throughputAt(index.row(), c));
      *set << v;
      top = std::max(top, v);
    }
    bars_->append(set);
  }
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.1);
  y->applyNiceNumbers();  // ticks on round numbers, not fifths of the tallest bar
  y->setLabelFormat("%.0f");
  y->setTitleText(tr("tok/s"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  bars_->attachAxis(x);
  bars_->attachAxis(y);
}

int BenchmarksPanel::comparedSets() const { return static_cast<int>(bars_->count()); }

bool BenchmarksPanel::exportCsv(const QString& path, QString* error) const {
  return saveAtomically(path, results_->toCsv().toUtf8(), error);
}

bool BenchmarksPanel::exportJson(const QString& path, QString* error) const {
  return saveAtomically(path, QJsonDocument(results_->toJson()).toJson(), error);
}

void BenchmarksPanel::exportWithDialog(bool json) {
  const QString path = FileDialog::saveFile(this, json ? tr("Export JSON") : tr("Export CSV"),
                                                    json ? "benchmarks.json" : "benchmarks.csv");
  if (path.isEmpty()) return;
  QString error;
  const bool ok = json ? exportJson(path, &error) : exportCsv(path, &error);
  setStatus(ok ? tr("Exported %1").arg(path) : tr("Export failed: %1").arg(error));
}

}  // namespace crosslab::widgets
