#include "widgets/bench_results_model.h"

#include <QColor>
#include <QJsonArray>
#include <QJsonObject>
#include <algorithm>
#include <set>

#include "core/bench/server_metrics.h"

namespace crosslab::widgets {

BenchResultsModel::BenchResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

void BenchResultsModel::setBenchmarks(std::vector<bench::StoredBenchmark> benchmarks) {
  // The same benchmarks at the same levels (a reload after another process wrote): update
  // the cells in place so that the selection and the comparison chart stay.
  auto sameShape = [](const bench::StoredBenchmark& a, const bench::StoredBenchmark& b) {
    return a.id == b.id && std::equal(a.levels.begin(), a.levels.end(), b.levels.begin(), b.levels.end(),
                                      [](const auto& x, const auto& y) { return x.concurrency == y.concurrency; });
  };
  if (!rows_.empty() && benchmarks.size() == rows_.size() &&
      std::equal(benchmarks.begin(), benchmarks.end(), rows_.begin(), sameShape)) {
    rows_ = std::move(benchmarks);
    emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    return;
  }
  beginResetModel();
  rows_ = std::move(benchmarks);
  std::set<int> levels;
  for (const auto& b : rows_)
    for (const auto& l : b.levels) levels.insert(l.concurrency);
  levels_.assign(levels.begin(), levels.end());
  endResetModel();
}

int BenchResultsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

// Label, status, 1-stream, levels…, best aggregate, $/M, notes
int BenchResultsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(levels_.size()) + 6;
}

const bench::StoredLevel* BenchResultsModel::levelAt(int row, int concurrency) const {
  for (const auto& l : rows_[static_cast<size_t>(row)].levels)
    if (l.concurrency == concurrency) return &l;
  return nullptr;
}

double BenchResultsModel::throughputAt(int row, int concurrency) const {
  const auto* l = levelAt(row, concurrency);
  return l && l->completed > 0 ? l->outputThroughput : -1;  // aborted live: nothing completed, no rate
}

const bench::StoredLevel* BenchResultsModel::best(int row) const {
  const auto& levels = rows_[static_cast<size_t>(row)].levels;
  const auto it = std::max_element(levels.begin(), levels.end(), [](const auto& a, const auto& b) {
    return a.outputThroughput < b.outputThroughput;
  });
  return it == levels.end() ? nullptr : &*it;
}

QString BenchResultsModel::statusText(int row) const {
  const auto& b = rows_[static_cast<size_t>(row)];
  switch (b.status) {
    case bench::SweepStatus::Failed: return tr("failed");
    case bench::SweepStatus::Stopped: return tr("stopped");
    case bench::SweepStatus::Running: return b.endedAt.empty() ? tr("running") : tr("interrupted");
    case bench::SweepStatus::Done: break;
  }
  return tr("done");
}

QString BenchResultsModel::cellText(int row, int column) const {
  const auto& b = rows_[static_cast<size_t>(row)];
  if (column == Label) return QString::fromStdString(b.header.label);
  if (column == Status) return statusText(row);
  if (column == OneStream) {
    // The lab's "1-stream" figure: decode tok/s of a single stream (the c=1 level, else the lowest).
    if (b.levels.empty()) return {};
    if (!b.levels.front().perStreamMeasured) return tr("not measured");
    return QString::number(b.levels.front().perStreamTokS, 'f', 1);
  }
  const int levelIndex = column - FirstLevel;
  if (levelIndex < static_cast<int>(levels_.size())) {
    const auto* l = levelAt(row, levels_[static_cast<size_t>(levelIndex)]);
    if (!l) return {};
    if (l->completed == 0) return l->collapse.empty() ? QString() : tr("collapse");  // aborted live: no rate
    return QString::number(l->outputThroughput, 'f', 1) + (l->collapse.empty() ? QString() : tr(" (collapse)"));
  }
  const auto* top = best(row);
  if (column == bestColumn()) return top ? QString("%1 (c=%2)").arg(top->outputThroughput, 0, 'f', 1).arg(top->concurrency) : QString();
  if (column == bestColumn() + 1)
    return top && top->usdPerMOutputTokens ? QString("$%1").arg(*top->usdPerMOutputTokens, 0, 'f', 3) : QString();
  if (!b.error.empty() && b.status == bench::SweepStatus::Failed) return QString::fromStdString(b.error);
  for (const auto& l : b.levels)
    if (!l.collapse.empty()) return QString::fromStdString(l.collapse);
  return QString::fromStdString(b.error);  // why it stopped early, if it did
}

namespace {

// What the server itself counted over a level (the sweep's "server" key, from its /metrics:
// core/bench/server_metrics.h); empty when the level has none.
QString serverTip(const bench::StoredLevel& l) {
  const auto count = bench::storedServerCount(l.resultJson);
  if (!count) return {};
  QString tip = QObject::tr("The server counted %1 tokens generated (the client %2)")
                    .arg(count->generatedTokens, 0, 'f', 0)
                    .arg(count->clientOutputTokens ? QString::number(*count->clientOutputTokens, 'f', 0)
                                                   : QObject::tr("did not say"));
  if (count->decodeRowsPerStep) {
    tip += QObject::tr("; decode steps of %1 rows").arg(*count->decodeRowsPerStep, 0, 'f', 1);
    if (count->decodeStepMs) tip += QObject::tr(", %1 ms each").arg(*count->decodeStepMs, 0, 'f', 2);
  }
  return tip;
}

}  // namespace

QVariant BenchResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  if (role == Qt::DisplayRole) return cellText(index.row(), index.column());
  if (role == Qt::TextAlignmentRole && index.column() >= OneStream && index.column() <= bestColumn() + 1)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  const auto& b = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::ToolTipRole && index.column() == Label) return QString::fromStdString(b.header.command);
  if (b.status == bench::SweepStatus::Failed && (index.column() == Status || index.column() == bestColumn() + 2)) {
    if (role == Qt::ForegroundRole) return QColor(Qt::red);
    if (role == Qt::ToolTipRole) return QString::fromStdString(b.error);
  }
  if (role == Qt::ToolTipRole && index.column() == bestColumn() + 2) return cellText(index.row(), index.column());
  const int levelIndex = index.column() - FirstLevel;
  if ((role == Qt::ToolTipRole || role == Qt::ForegroundRole) && levelIndex >= 0 &&
      levelIndex < static_cast<int>(levels_.size())) {
    const auto* l = levelAt(index.row(), levels_[static_cast<size_t>(levelIndex)]);
    if (!l) return {};
    const bool bad = !l->collapse.empty() || l->failed > 0;
    if (role == Qt::ForegroundRole) return bad ? QVariant(QColor(Qt::red)) : QVariant();
    QStringList tip;
    if (bad)
      tip << tr("%1 completed, %2 failed%3").arg(l->completed).arg(l->failed)
                 .arg(l->collapse.empty() ? QString() : "\n" + QString::fromStdString(l->collapse));
    if (const QString server = serverTip(*l); !server.isEmpty()) tip << server;
    return tip.isEmpty() ? QVariant() : QVariant(tip.join('\n'));
  }
  return {};
}

QVariant BenchResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
    // The two rates differ by design (one stream's decode pace, a level's delivered output):
    // short replies or a slow first token put the c=1 figure well under the 1-stream one.
    if (section == OneStream)
      return tr("One stream's decode rate at the sweep's lowest level (c=1 when swept): the tokens after the "
                "first, per second after the first (time to first token left out)");
    if (section >= FirstLevel && section < bestColumn())
      return tr("Output tokens per second of the level, all streams together, over the level's whole time "
                "(time to first token and the gaps between requests in): vLLM's output_throughput");
    if (section == bestColumn()) return tr("The highest c=N figure, and its level");
    if (section == bestColumn() + 1)
      return tr("Dollars per million output tokens at the best level, from the venue's price per hour");
    return {};
  }
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  if (section == Label) return tr("Venue / method");
  if (section == Status) return tr("Status");
  if (section == OneStream) return tr("1-stream tok/s");
  const int levelIndex = section - FirstLevel;
  if (levelIndex < static_cast<int>(levels_.size())) return tr("c=%1 tok/s").arg(levels_[static_cast<size_t>(levelIndex)]);
  if (section == bestColumn()) return tr("Best aggregate");
  if (section == bestColumn() + 1) return tr("$/M output");
  return tr("Notes");
}

// Figures as plain numbers (no units, no markers), so a spreadsheet reads them as such.
QString BenchResultsModel::toCsv() const {
  auto quote = [](QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace('"', "\"\"") + '"';
    return s;
  };
  auto number = [](double v, int decimals) { return QString::number(v, 'f', decimals); };
  QStringList header{"Venue / method", "Status", "1-stream tok/s"};
  for (int c : levels_) header << QString("c=%1 tok/s").arg(c);
  header << "Best aggregate tok/s" << "Best at concurrency" << "$/M output" << "Collapse" << "Error";
  QStringList lines{header.join(',')};
  for (int r = 0; r < rowCount(); ++r) {
    const auto& b = rows_[static_cast<size_t>(r)];
    QStringList cells{quote(QString::fromStdString(b.header.label)), QString(bench::sweepStatusName(b.status))};
    cells << (b.levels.empty() || !b.levels.front().perStreamMeasured ? QString()
                                                                      : number(b.levels.front().perStreamTokS, 1));
    QString collapse;
    for (int c : levels_) {
      const auto* l = levelAt(r, c);
      cells << (l && l->completed > 0 ? number(l->outputThroughput, 1) : QString());
      if (l && !l->collapse.empty() && collapse.isEmpty()) collapse = QString::fromStdString(l->collapse);
    }
    const auto* top = best(r);
    cells << (top ? number(top->outputThroughput, 1) : QString()) << (top ? QString::number(top->concurrency) : QString())
          << (top && top->usdPerMOutputTokens ? number(*top->usdPerMOutputTokens, 3) : QString()) << quote(collapse)
          << quote(QString::fromStdString(b.error));
    lines << cells.join(',');
  }
  return lines.join('\n') + '\n';
}

QJsonArray BenchResultsModel::toJson() const {
  QJsonArray out;
  for (const auto& b : rows_) {
    QJsonArray levels;
    for (const auto& l : b.levels) {
      QJsonObject o{{"concurrency", l.concurrency}, {"completed", qint64(l.completed)}, {"failed", qint64(l.failed)},
                    {"output_throughput", l.outputThroughput},
                    {"per_stream_tok_s", l.perStreamMeasured ? QJsonValue(l.perStreamTokS) : QJsonValue()},
                    {"mean_ttft_ms", l.meanTtftMs}, {"p99_tpot_ms", l.p99TpotMs}};
      o["usd_per_m_output_tokens"] = l.usdPerMOutputTokens ? QJsonValue(*l.usdPerMOutputTokens) : QJsonValue();
      o["collapse"] = l.collapse.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(l.collapse));
      levels.append(o);
    }
    out.append(QJsonObject{{"id", qint64(b.id)}, {"label", QString::fromStdString(b.header.label)},
                           {"url", QString::fromStdString(b.header.url)}, {"model", QString::fromStdString(b.header.model)},
                           {"command", QString::fromStdString(b.header.command)}, {"started_at", QString::fromStdString(b.startedAt)},
                           {"status", bench::sweepStatusName(b.status)},
                           {"error", b.error.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(b.error))},
                           {"levels", levels}});
  }
  return out;
}

}  // namespace crosslab::widgets
