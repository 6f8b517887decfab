#include "widgets/review_model.h"

#include <QColor>
#include <QPainter>

#include <nlohmann/json.hpp>

#include "core/eval/output_diff.h"

namespace crosslab::widgets {
namespace {

const QColor kGreen(0x2e, 0xa0, 0x43), kAmber(0xe0, 0x9b, 0x00), kRed(0xd0, 0x3a, 0x2f), kGray(0x9a, 0x9a, 0x9a);

QColor verdictColor(const QString& v) {
  if (v == "accept") return kGreen;
  if (v == "reject") return kRed;
  if (v == "abstain") return kAmber;
  return kGray;
}

}  // namespace

ReviewModel::ReviewModel(QObject* parent) : QAbstractItemModel(parent) {}

void ReviewModel::setSnapshot(std::shared_ptr<ReviewSnapshot> snapshot) {
  beginResetModel();
  snap_ = std::move(snapshot);
  undo_.clear();
  dotCache_.clear();
  headerLabels_.clear();
  const auto& models = snap_->models;
  compared_[0] = models.empty() ? QString() : QString::fromStdString(models[0]);
  compared_[1] = models.size() < 2 ? compared_[0] : QString::fromStdString(models[1]);
  current_ = snap_->evalSet.questions.empty() ? -1 : 0;
  rebuildRows();
  endResetModel();
  emit currentChanged(current_);
}

void ReviewModel::refreshSnapshot(std::shared_ptr<ReviewSnapshot> snapshot) {
  if (!snap_ || snap_->evalSet.sha256 != snapshot->evalSet.sha256) {
    setSnapshot(std::move(snapshot));
    return;
  }
  const QString first = compared_[0], second = compared_[1];
  const int question = current_;
  const auto undo = undo_;
  setSnapshot(std::move(snapshot));
  undo_ = undo;
  setCompared(first, second);
  if (const int row = rowOf(question); row >= 0) setCurrentRow(row);
}

void ReviewModel::clear() {
  beginResetModel();
  snap_.reset();
  undo_.clear();
  rows_.clear();
  headerLabels_.clear();
  current_ = -1;
  endResetModel();
  emit currentChanged(current_);
}

QModelIndex ReviewModel::index(int row, int column, const QModelIndex& parent) const {
  if (parent.isValid() || row < 0 || row >= rows_.size() || column < 0 || column >= columnCount()) return {};
  return createIndex(row, column);
}

QModelIndex ReviewModel::parent(const QModelIndex&) const { return {}; }

int ReviewModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }

int ReviewModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !snap_ ? 0 : 1 + static_cast<int>(snap_->models.size());
}

QVariant ReviewModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole) || !snap_) return {};
  if (section == 0) return tr("Question");
  // Model names are part of what blind mode hides.
  if (blind_) return tr("model %1").arg(section);
  const QString name = QString::fromStdString(snap_->models[static_cast<size_t>(section - 1)]);
  if (role == Qt::ToolTipRole) return name;
  return headerLabels_.value(section - 1, name);
}

void ReviewModel::setModelHeaderLabels(const QStringList& labels) {
  if (labels == headerLabels_) return;
  headerLabels_ = labels;
  if (columnCount() > 1) emit headerDataChanged(Qt::Horizontal, 1, columnCount() - 1);
}

QVariant ReviewModel::data(const QModelIndex& idx, int role) const {
  if (!idx.isValid() || !snap_) return {};
  const int q = rows_[idx.row()];
  const auto& question = snap_->evalSet.questions[q];
  if (idx.column() == 0) {
    if (role == Qt::DisplayRole) {
      QString text = QString::fromStdString(question.question);
      if (text.size() > 80) text = text.left(79) + QChar(0x2026);
      return QString::fromStdString(question.id) + "  " + text;
    }
    if (role == Qt::ToolTipRole) return QString::fromStdString(question.question);
    return {};
  }
  const int record = snap_->find(q, snap_->models[idx.column() - 1]);
  if (record < 0) return role == Qt::ToolTipRole ? QVariant(tr("no output")) : QVariant();
  if (role == Qt::DecorationRole) return dots(record);
  if (role == Qt::ToolTipRole || role == Qt::UserRole) return tooltip(record);
  return {};
}

const eval::StoredVerdict* ReviewModel::latest(int record, const std::string& instrument) const {
  auto it = snap_->verdicts.find(snap_->sampleIds[record]);
  if (it == snap_->verdicts.end()) return nullptr;
  if (instrument.back() == ':') {  // first instrument with this prefix ("gate:")
    for (const auto& [name, v] : it->second)
      if (name.rfind(instrument, 0) == 0) return &v;
    return nullptr;
  }
  auto v = it->second.find(instrument);
  return v == it->second.end() ? nullptr : &v->second;
}

QString ReviewModel::verdictOf(int record, const std::string& instrument) const {
  const auto* v = record >= 0 && snap_ ? latest(record, instrument) : nullptr;
  return v ? QString::fromStdString(v->verdict) : QString();
}

// "format strict, quotes exact, gate accept, human none" — also the dots' test hook.
QString ReviewModel::tooltip(int record) const {
  const auto& s = snap_->report.samples[record];
  QString quotes = tr("none");
  if (s.count(eval::QuoteKind::Fabricated) || s.count(eval::QuoteKind::Invalid)) quotes = "fabricated";
  else if (s.count(eval::QuoteKind::Fuzzy)) quotes = "fuzzy";
  else if (!s.quotes.empty()) quotes = "exact";
  const QString gate = verdictOf(record, "gate:"), human = verdictOf(record, "human");
  return QString("format %1, quotes %2, gate %3, human %4")
      .arg(eval::formatKindName(s.format.kind), quotes, gate.isEmpty() ? "none" : gate, human.isEmpty() ? "none" : human);
}

QPixmap ReviewModel::dots(int record) const {
  const auto& s = snap_->report.samples[record];
  const QColor format = s.format.kind == eval::FormatKind::Strict   ? kGreen
                        : s.format.kind == eval::FormatKind::Fenced ? kAmber
                                                                    : kRed;
  QColor quotes = kGray;
  if (s.count(eval::QuoteKind::Fabricated) || s.count(eval::QuoteKind::Invalid)) quotes = kRed;
  else if (s.count(eval::QuoteKind::Fuzzy)) quotes = kAmber;
  else if (!s.quotes.empty()) quotes = kGreen;
  const QColor colors[4] = {format, quotes, verdictColor(verdictOf(record, "gate:")), verdictColor(verdictOf(record, "human"))};
  QString key;
  for (const auto& c : colors) key += c.name();
  if (auto it = dotCache_.find(key); it != dotCache_.end()) return *it;
  QPixmap pm(kDotsWidth, 12);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  for (int i = 0; i < 4; ++i) {
    p.setBrush(colors[i]);
    p.drawEllipse(QRectF(i * 12 + 2, 2, 8, 8));
  }
  p.end();
  dotCache_.insert(key, pm);
  return pm;
}

void ReviewModel::setCompared(const QString& first, const QString& second) {
  if (!snap_) return;
  auto known = [&](const QString& m) {
    for (const auto& name : snap_->models)
      if (m.toStdString() == name) return true;
    return false;
  };
  if (!known(first) || !known(second)) return;
  beginResetModel();
  compared_[0] = first;
  compared_[1] = second;
  rebuildRows();
  endResetModel();
  emit currentChanged(current_);
}

void ReviewModel::setFilter(Filter filter) {
  beginResetModel();
  filter_ = filter;
  rebuildRows();
  endResetModel();
  emit currentChanged(current_);
}

bool ReviewModel::rowMatches(int q) const {
  if (filter_ == All) return true;
  const int x = snap_->find(q, compared_[0].toStdString()), y = snap_->find(q, compared_[1].toStdString());
  if (filter_ == DifferentOnly) {
    if (x < 0 || y < 0) return x != y;
    return !eval::outputsIdentical(snap_->records[x].output, snap_->records[y].output);
  }
  for (int r : {x, y}) {
    if (r < 0) continue;
    const auto& s = snap_->report.samples[r];
    if (filter_ == FabricatedOnly && s.count(eval::QuoteKind::Fabricated)) return true;
    if (filter_ == InstrumentsDisagree) {
      QVector<bool> accepts{s.formatAccepted(), s.quotesAccepted()};
      for (const char* name : {"gate:", "human"})
        if (const QString v = verdictOf(r, name); !v.isEmpty()) accepts.push_back(v == "accept");
      if (accepts.contains(true) && accepts.contains(false)) return true;
    }
  }
  return false;
}

void ReviewModel::rebuildRows() {
  rows_.clear();
  if (!snap_) return;
  for (int q = 0; q < static_cast<int>(snap_->evalSet.questions.size()); ++q)
    if (rowMatches(q)) rows_.push_back(q);
  if (!rows_.contains(current_)) current_ = rows_.isEmpty() ? -1 : rows_.front();
}

bool ReviewModel::setCurrentRow(int row) {
  if (row < 0 || row >= rows_.size()) return false;
  if (rows_[row] != current_) {
    current_ = rows_[row];
    emit currentChanged(current_);
  }
  return true;
}

bool ReviewModel::requestMove(int delta) { return setCurrentRow(currentRow() + delta); }

void ReviewModel::setBlind(bool on, quint32 seed) {
  beginResetModel();
  blind_ = on;
  seed_ = seed;
  endResetModel();
  emit currentChanged(current_);
}

bool ReviewModel::swapped(int q) const {
  if (!blind_ || !snap_ || q < 0) return false;
  return (qHash(QString::fromStdString(snap_->evalSet.questions[q].id), seed_) & 1u) != 0;
}

QString ReviewModel::sideModel(Side side) const {
  return compared_[swapped(current_) ? 1 - side : side];
}

bool ReviewModel::revealed(int q) const {
  if (!snap_ || q < 0) return false;
  const int x = snap_->find(q, compared_[0].toStdString()), y = snap_->find(q, compared_[1].toStdString());
  if (!pairOutcome(q).empty()) return true;
  return x >= 0 && y >= 0 && !verdictOf(x, "human").isEmpty() && !verdictOf(y, "human").isEmpty();
}

QString ReviewModel::sideLabel(Side side) const {
  if (blind_ && !revealed(current_)) return side == A ? tr("A") : tr("B");
  return sideModel(side);
}

int ReviewModel::sampleIndex(Side side) const {
  if (!snap_ || current_ < 0) return -1;
  return snap_->find(current_, sideModel(side).toStdString());
}

std::string ReviewModel::pairOutcome(int q) const {
  if (!snap_ || q < 0) return {};
  const int x = snap_->find(q, compared_[0].toStdString()), y = snap_->find(q, compared_[1].toStdString());
  if (x < 0 || y < 0 || x == y) return {};
  const std::int64_t sx = snap_->sampleIds[x], sy = snap_->sampleIds[y];
  if (auto it = snap_->pairVerdicts.find({sx, sy}); it != snap_->pairVerdicts.end()) return it->second.verdict;
  if (auto it = snap_->pairVerdicts.find({sy, sx}); it != snap_->pairVerdicts.end()) {  // judged with the sides the other way round
    const std::string& v = it->second.verdict;
    return v == "x" ? "y" : v == "y" ? "x" : v;
  }
  return {};
}

QString ReviewModel::pairVerdict(int q) const {
  const std::string v = pairOutcome(q);
  if (v == "tie") return "parity";
  if (v != "x" && v != "y") return {};
  const bool xOnA = !swapped(q);
  return (v == "x") == xOnA ? "A" : "B";
}

bool ReviewModel::record(int rec, const std::string& instrument, const std::string& verdict, const std::string& detail,
                         std::int64_t otherId) {
  const std::int64_t sampleId = snap_->sampleIds[rec];
  std::int64_t id = 0;
  try {
    id = store_ ? store_->addVerdict(sampleId, instrument, verdict, detail) : memoryIds_--;
  } catch (const std::exception& e) {
    emit errorOccurred(tr("Verdict not saved: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  const eval::StoredVerdict stored{id, sampleId, instrument, verdict, detail, store::utcNow(), std::nullopt};
  std::optional<eval::StoredVerdict> previous;
  if (otherId) {  // pairwise: kept by the pair it judged
    auto& slot = snap_->pairVerdicts;
    if (auto it = slot.find({sampleId, otherId}); it != slot.end()) previous = it->second;
    slot[{sampleId, otherId}] = stored;
  } else {
    auto& byName = snap_->verdicts[sampleId];
    if (auto it = byName.find(instrument); it != byName.end()) previous = it->second;
    byName[instrument] = stored;
  }
  undo_.push_back({id, sampleId, instrument, previous, otherId});
  const int row = currentRow();
  if (row >= 0) emit dataChanged(index(row, 0), index(row, columnCount() - 1));
  emit verdictsChanged();
  return true;
}

bool ReviewModel::requestPairVerdict(std::optional<Side> winner) {
  const int x = snap_ ? snap_->find(current_, compared_[0].toStdString()) : -1;
  const int y = snap_ ? snap_->find(current_, compared_[1].toStdString()) : -1;
  if (x < 0 || y < 0 || x == y) return false;
  std::string verdict = "tie";
  if (winner) verdict = sideModel(*winner) == compared_[0] ? "x" : "y";
  return record(x, "human:pair", verdict, nlohmann::json{{"other", snap_->sampleIds[y]}}.dump(), snap_->sampleIds[y]);
}

bool ReviewModel::requestSampleVerdict(Side side, bool accept) {
  const int r = sampleIndex(side);
  return r >= 0 && record(r, "human", accept ? "accept" : "reject", "{}");
}

bool ReviewModel::requestComment(Side side, const QString& text) {
  const int r = sampleIndex(side);
  if (r < 0 || text.trimmed().isEmpty()) return false;
  return record(r, "human:comment", "comment", nlohmann::json{{"text", text.toStdString()}}.dump());
}

bool ReviewModel::requestUndo() {
  if (undo_.isEmpty() || !snap_) return false;
  const UndoEntry e = undo_.back();
  try {
    if (store_) store_->deleteVerdict(e.verdictId);
  } catch (const std::exception& ex) {
    emit errorOccurred(tr("Undo failed: %1").arg(QString::fromStdString(ex.what())));
    return false;
  }
  undo_.pop_back();
  if (e.otherId) {
    if (e.previous) snap_->pairVerdicts[{e.sampleId, e.otherId}] = *e.previous;
    else snap_->pairVerdicts.erase({e.sampleId, e.otherId});
  } else {
    auto& byName = snap_->verdicts[e.sampleId];
    if (e.previous) byName[e.instrument] = *e.previous;
    else byName.erase(e.instrument);
  }
  if (columnCount() > 0 && !rows_.isEmpty()) emit dataChanged(index(0, 0), index(rows_.size() - 1, columnCount() - 1));
  emit verdictsChanged();
  return true;
}

}  // namespace crosslab::widgets
