#pragma once
// The Review panel's item model: one row per eval question (after the filter), column 0
// the question, then one column per loaded model with four status dots (format, fidelity,
// gate, human). It also holds the review state the keys drive: the current question, the
// two models compared, blind mode (names hidden, sides shuffled per question until a
// verdict is entered), and human verdicts, which save as they are made (request… methods
// either fully succeed or change nothing) and can be undone.

#include <QAbstractItemModel>
#include <QHash>
#include <QPixmap>
#include <QVector>

#include <memory>
#include <optional>

#include "widgets/review_snapshot.h"

namespace crosslab::widgets {

class ReviewModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Filter { All, DifferentOnly, FabricatedOnly, InstrumentsDisagree };
  static constexpr int kDotsWidth = 4 * 12;  // a model column's status dots, px
  enum Side { A = 0, B = 1 };

  explicit ReviewModel(QObject* parent = nullptr);

  void setSnapshot(std::shared_ptr<ReviewSnapshot> snapshot);
  // Forgets the snapshot and the undo history (another lab was opened).
  void clear();
  const ReviewSnapshot* snapshot() const { return snap_.get(); }
  // Where verdicts are saved; may be null (verdicts then live in memory only).
  void setStore(eval::EvalStore* store) { store_ = store; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  // The same eval set read again (another process wrote to the lab): keeps the compared
  // models, the current question and the undo stack where they still exist.
  void refreshSnapshot(std::shared_ptr<ReviewSnapshot> snapshot);
  // Header labels for the model columns when the view has no room for the names (the
  // full name stays the header's tooltip); empty = the names.
  void setModelHeaderLabels(const QStringList& labels);

  // The two models compared (labels from the snapshot); unknown names are ignored.
  void setCompared(const QString& first, const QString& second);
  QString compared(int i) const { return compared_[i]; }
  void setFilter(Filter filter);
  Filter filter() const { return filter_; }
  int questionAt(int row) const { return row >= 0 && row < rows_.size() ? rows_[row] : -1; }
  int rowOf(int question) const { return rows_.indexOf(question); }

  int currentQuestion() const { return current_; }
  int currentRow() const { return rowOf(current_); }
  bool setCurrentRow(int row);
  bool requestMove(int delta);  // j / k

  void setBlind(bool on, quint32 seed);
  bool blind() const { return blind_; }
  bool swapped(int question) const;   // displayed A shows compared(1)
  bool revealed(int question) const;  // a verdict has been entered for this question
  QString sideLabel(Side side) const; // "A" / "B" while hidden, else the model name
  QString sideModel(Side side) const;
  int sampleIndex(Side side) const;   // record index shown on that side, or -1

  bool requestPairVerdict(std::optional<Side> winner);  // nullopt = parity
  bool requestSampleVerdict(Side side, bool accept);
  bool requestComment(Side side, const QString& text);
  bool requestUndo();
  int undoDepth() const { return undo_.size(); }

  // Latest verdict of an instrument on a record ("" when none).
  QString verdictOf(int recordIndex, const std::string& instrument) const;
  // The human verdict on exactly the compared pair of this question (never one given on
  // another pairing of either output): "A", "B", "parity" in displayed terms, or "".
  QString pairVerdict(int question) const;

 signals:
  void currentChanged(int question);
  void verdictsChanged();
  void errorOccurred(const QString& message);

 private:
  struct UndoEntry {
    std::int64_t verdictId;
    std::int64_t sampleId;
    std::string instrument;
    std::optional<eval::StoredVerdict> previous;
    std::int64_t otherId = 0;  // "human:pair": the other sample of the pair
  };
  // The compared pair's human verdict in compared terms: "x" (compared(0) better), "y", "tie", or "".
  std::string pairOutcome(int question) const;
  void rebuildRows();
  bool rowMatches(int question) const;
  bool record(int recordIndex, const std::string& instrument, const std::string& verdict, const std::string& detail,
              std::int64_t otherId = 0);
  QPixmap dots(int recordIndex) const;
  QString tooltip(int recordIndex) const;
  const eval::StoredVerdict* latest(int recordIndex, const std::string& instrument) const;

  std::shared_ptr<ReviewSnapshot> snap_;
  eval::EvalStore* store_ = nullptr;
  QVector<int> rows_;  // question indices shown
  QString compared_[2];
  Filter filter_ = All;
  int current_ = -1;
  bool blind_ = false;
  quint32 seed_ = 0;
  QVector<UndoEntry> undo_;
  std::int64_t memoryIds_ = -1;  // verdict ids when no store is attached
  mutable QHash<QString, QPixmap> dotCache_;
  QStringList headerLabels_;
};

}  // namespace crosslab::widgets
