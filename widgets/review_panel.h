#pragma once
// The Review panel: eval questions on the left (status dots per model), the question and
// its contexts in the centre with two outputs side by side, every evidence quote
// highlighted in the output and at its matched place in the context (exact green, fuzzy
// amber, fabricated red; click a quote to jump), a word-level / JSON-aware diff, filters,
// blind mode, and at the bottom the instruments table with kappa and calibration.
// Keyboard first: j/k question, 1/2/= A/B/parity, a/r accept/reject the current side,
// s switch side, c comment, u undo. Loading and checking run on a worker thread.

#include <QTextEdit>
#include <QWidget>

#include <memory>

#include "widgets/review_model.h"
#include "widgets/review_text.h"

class QComboBox;
class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QThread;
class QTreeView;
class QTimer;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class ReviewPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ReviewPanel(backends::LabSession* session, QWidget* parent = nullptr);
  ~ReviewPanel() override;

  // Loads an eval set's samples from the open lab (after importing `importOutputs`, if
  // given) on a worker thread; emits loaded() when done.
  void loadEval(const QString& evalPath, const QString& importOutputs = {});
  bool busy() const { return worker_ != nullptr; }
  // Handles one review key; false when it is not a review key. (Also reached from keys
  // typed anywhere in the panel.)
  bool handleKey(int key);

  ReviewModel* model() const { return model_; }
  int currentSide() const { return side_; }
  QPlainTextEdit* contextsView() const { return contexts_; }
  QPlainTextEdit* outputView(int side) const { return outputs_[side]; }
  QLabel* sideTitle(int side) const { return titles_[side]; }
  QListWidget* quoteList(int side) const { return quotes_[side]; }
  QLineEdit* commentEdit() const { return comment_; }
  QTreeView* questionList() const { return questions_; }
  QComboBox* modelCombo(int i) const { return modelCombo_[i]; }
  QLabel* statusLabel() const { return status_; }
  QTableWidget* instrumentsTable() const { return table_; }
  QLabel* agreementLabel() const { return agreement_; }
  QTextEdit* diffView() const { return diff_; }
  // Jumps the contexts view to quote `quote` of `side`; false when it has no place there.
  bool jumpToQuote(int side, int quote);

 signals:
  void loaded(bool ok, const QString& error);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  QWidget* buildToolbar();
  QWidget* buildCenter();
  QWidget* buildBottom();
  void onLabChanged();
  // Another process wrote to the lab: reload when samples or verdicts changed, keeping place.
  void onLabDataChanged();
  void onLoaded(std::shared_ptr<ReviewSnapshot> snapshot, const QString& error);
  void render(int question);
  void renderSide(int side, QList<QTextEdit::ExtraSelection>& contextMarks);
  void renderTitles();
  void refreshTable();
  void clearTable();
  void fitTableHeight();
  void fitQuestionColumns();
  void fillModelCombos();
  void chooseEval();
  void chooseOutputs();
  void startComment();
  void saveComment();
  void onOutputClicked(int side);

  backends::LabSession* session_;
  ReviewModel* model_;
  std::unique_ptr<eval::EvalStore> store_;
  QString evalPath_;
  QThread* worker_ = nullptr;
  bool refreshing_ = false;      // the running load is a freshness reload
  bool refreshPending_ = false;  // the lab changed while a load was running
  int side_ = 0;
  int renderedQuestion_ = -1;
  ContextsText contextsText_;
  QVector<Highlight> contextMarks_[2];
  QVector<Highlight> outputMarks_[2];

  QPushButton* openEval_;
  QPushButton* importOutputs_;
  QComboBox* modelCombo_[2];
  QComboBox* filter_;
  QCheckBox* blind_;
  QProgressBar* progress_;
  QLabel* status_;
  QTreeView* questions_;
  QLabel* question_;
  QPlainTextEdit* contexts_;
  QLabel* titles_[2];
  QPlainTextEdit* outputs_[2];
  QListWidget* quotes_[2];
  QTextEdit* diff_;
  QLineEdit* comment_;
  QTableWidget* table_;
  QLabel* agreement_;
  QTimer* tableTimer_;
};

}  // namespace crosslab::widgets
