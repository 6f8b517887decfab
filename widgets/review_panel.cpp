#include "widgets/review_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSplitter>
#include <QStyle>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "widgets/file_dialogs.h"
#include "widgets/instrument_grid.h"

namespace crosslab::widgets {
namespace {

constexpr const char* kEvalSetting = "review.eval_path";  // lab setting: the eval set last reviewed

QColor background(eval::QuoteKind kind) {
  switch (kind) {
    case eval::QuoteKind::Exact: return QColor(0xb7, 0xeb, 0xc0);       // green
    case eval::QuoteKind::Fuzzy: return QColor(0xff, 0xdf, 0x8a);       // amber
    case eval::QuoteKind::Fabricated: return QColor(0xf6, 0xb0, 0xa8);  // red
    case eval::QuoteKind::Invalid: break;
  }
  return QColor(0xdd, 0xdd, 0xdd);
}

QTextEdit::ExtraSelection mark(QPlainTextEdit* view, const Highlight& h) {
  QTextEdit::ExtraSelection s;
  s.cursor = QTextCursor(view->document());
  s.cursor.setPosition(h.start);
  s.cursor.setPosition(h.start + h.length, QTextCursor::KeepAnchor);
  s.format.setBackground(background(h.kind));
  return s;
}

QPlainTextEdit* readOnlyText() {
  auto* t = new QPlainTextEdit;
  t->setReadOnly(true);
  t->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  return t;
}

}  // namespace

ReviewPanel::ReviewPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), model_(new ReviewModel(this)), tableTimer_(new QTimer(this)) {
  setObjectName("reviewPanel");
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(buildToolbar());
  auto* split = new QSplitter(Qt::Vertical);
  auto* top = new QSplitter(Qt::Horizontal);
  questions_ = new QTreeView;
  questions_->setObjectName("reviewQuestions");
  questions_->setModel(model_);
  questions_->setRootIsDecorated(false);
  questions_->setUniformRowHeights(true);  // lets 10k-row lists scroll without measuring every row
  questions_->setMinimumWidth(300);
  // The question takes what the model columns (four dots each) leave; every model shows.
  questions_->header()->setStretchLastSection(false);
  questions_->header()->setMinimumSectionSize(40);
  connect(model_, &QAbstractItemModel::modelReset, this, &ReviewPanel::fitQuestionColumns);
  top->addWidget(questions_);
  top->addWidget(buildCenter());
  top->setStretchFactor(0, 2);
  top->setStretchFactor(1, 3);
  top->setSizes({2 * 1000, 3 * 1000});  // 2 : 3 from the start, whatever the window
  split->addWidget(top);
  split->addWidget(buildBottom());
  split->setStretchFactor(0, 4);
  split->setCollapsible(1, false);
  layout->addWidget(split, 1);
  auto* hint = new QLabel(tr("j/k next/previous · 1 / 2 / = A better / B better / parity · a/r accept/reject the "
                             "current side · s switch side · c comment · u undo") + "\n" + quoteRuleShort());
  hint->setObjectName("reviewHint");
  hint->setEnabled(false);
  hint->setWordWrap(true);
  layout->addWidget(hint);

  tableTimer_->setSingleShot(true);
  tableTimer_->setInterval(250);  // coalesce table rebuilds while verdicts are keyed fast
  connect(tableTimer_, &QTimer::timeout, this, &ReviewPanel::refreshTable);
  connect(model_, &ReviewModel::currentChanged, this, &ReviewPanel::render);
  connect(model_, &ReviewModel::verdictsChanged, this, [this] {
    renderTitles();
    tableTimer_->start();
  });
  connect(model_, &ReviewModel::errorOccurred, status_, &QLabel::setText);
  connect(questions_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& idx) { model_->setCurrentRow(idx.row()); });
  connect(session_, &backends::LabSession::labChanged, this, &ReviewPanel::onLabChanged);
  connect(session_, &backends::LabSession::labDataChanged, this, &ReviewPanel::onLabDataChanged);
  for (QWidget* w : findChildren<QWidget*>()) w->installEventFilter(this);
  comment_->removeEventFilter(this);  // typing a comment must reach the line edit
  onLabChanged();
}

ReviewPanel::~ReviewPanel() {
  if (worker_) worker_->wait();
}

QWidget* ReviewPanel::buildToolbar() {
  // Two rows, so that at 1024 px neither the filter nor the status line is cut: the
  // controls, then the status (word-wrapped) with the busy bar.
  auto* bar = new QWidget;
  auto* rows = new QVBoxLayout(bar);
  rows->setContentsMargins(0, 0, 0, 0);
  rows->setSpacing(2);
  auto* h = new QHBoxLayout;
  rows->addLayout(h);
  openEval_ = new QPushButton(tr("Open Eval Set…"));
  importOutputs_ = new QPushButton(tr("Import Outputs…"));
  openEval_->setObjectName("openEvalButton");
  importOutputs_->setObjectName("importOutputsButton");
  connect(openEval_, &QPushButton::clicked, this, &ReviewPanel::chooseEval);
  connect(importOutputs_, &QPushButton::clicked, this, &ReviewPanel::chooseOutputs);
  h->addWidget(openEval_);
  h->addWidget(importOutputs_);
  for (int i = 0; i < 2; ++i) {
    modelCombo_[i] = new QComboBox;
    modelCombo_[i]->setObjectName(QString("reviewModel%1").arg(i));
    modelCombo_[i]->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    modelCombo_[i]->setMinimumContentsLength(10);
    h->addWidget(new QLabel(i == 0 ? tr("Compare") : tr("with")));
    h->addWidget(modelCombo_[i], 1);
    connect(modelCombo_[i], &QComboBox::activated, this,
            [this] { model_->setCompared(modelCombo_[0]->currentText(), modelCombo_[1]->currentText()); });
  }
  filter_ = new QComboBox;
  filter_->setObjectName("reviewFilter");
  filter_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "Instruments disagree" whole
  filter_->addItems({tr("All questions"), tr("Different only"), tr("Fabricated only"), tr("Instruments disagree")});
  connect(filter_, &QComboBox::activated, this, [this](int i) { model_->setFilter(static_cast<ReviewModel::Filter>(i)); });
  h->addWidget(filter_);
  blind_ = new QCheckBox(tr("Blind"));
  blind_->setObjectName("reviewBlind");
  blind_->setToolTip(tr("Hide model names and shuffle sides per question until a verdict is entered"));
  connect(blind_, &QCheckBox::toggled, this,
          [this](bool on) {
            model_->setBlind(on, QRandomGenerator::global()->generate());
            refreshTable();  // its row labels are model names too
          });
  h->addWidget(blind_);
  auto* second = new QHBoxLayout;
  rows->addLayout(second);
  progress_ = new QProgressBar;
  progress_->setRange(0, 0);  // busy: checking has no useful fraction to show
  progress_->setMaximumWidth(120);
  progress_->hide();
  second->addWidget(progress_);
  status_ = new QLabel;
  status_->setObjectName("reviewStatus");
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // long errors must not widen the window
  second->addWidget(status_, 1);
  return bar;
}

QWidget* ReviewPanel::buildCenter() {
  auto* center = new QWidget;
  auto* v = new QVBoxLayout(center);
  v->setContentsMargins(0, 0, 0, 0);
  question_ = new QLabel;
  question_->setWordWrap(true);
  question_->setTextFormat(Qt::PlainText);
  v->addWidget(question_);
  auto* split = new QSplitter(Qt::Vertical);
  contexts_ = readOnlyText();
  contexts_->setObjectName("reviewContexts");
  split->addWidget(contexts_);
  auto* sides = new QWidget;
  auto* h = new QHBoxLayout(sides);
  h->setContentsMargins(0, 0, 0, 0);
  for (int i = 0; i < 2; ++i) {
    auto* col = new QVBoxLayout;
    titles_[i] = new QLabel;
    outputs_[i] = readOnlyText();
    quotes_[i] = new QListWidget;
    quotes_[i]->setMaximumHeight(90);
    col->addWidget(titles_[i]);
    col->addWidget(outputs_[i], 1);
    col->addWidget(quotes_[i]);
    h->addLayout(col);
    connect(quotes_[i], &QListWidget::itemClicked, this,
            [this, i](QListWidgetItem* item) { jumpToQuote(i, item->data(Qt::UserRole).toInt()); });
    connect(outputs_[i], &QPlainTextEdit::cursorPositionChanged, this, [this, i] { onOutputClicked(i); });
  }
  split->addWidget(sides);
  diff_ = new QTextEdit;
  diff_->setReadOnly(true);
  diff_->setObjectName("reviewDiff");
  split->addWidget(diff_);
  split->setStretchFactor(0, 3);  // contexts
  split->setStretchFactor(1, 3);  // outputs
  split->setStretchFactor(2, 1);  // diff
  v->addWidget(split, 1);
  comment_ = new QLineEdit;
  comment_->setPlaceholderText(tr("Comment on the current side — Enter saves, Esc cancels"));
  comment_->hide();
  connect(comment_, &QLineEdit::returnPressed, this, &ReviewPanel::saveComment);
  v->addWidget(comment_);
  return center;
}

QWidget* ReviewPanel::buildBottom() {
  auto* bottom = new QWidget;
  auto* v = new QVBoxLayout(bottom);
  v->setContentsMargins(0, 0, 0, 0);
  table_ = new QTableWidget;
  table_->setObjectName("reviewInstruments");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  v->addWidget(table_, 1);
  fitTableHeight();
  agreement_ = new QLabel;
  agreement_->setWordWrap(true);
  agreement_->setTextFormat(Qt::PlainText);
  v->addWidget(agreement_);
  return bottom;
}

void ReviewPanel::onLabChanged() {
  const bool open = session_->isOpen();
  // The shown samples belong to the previous lab: never write their verdicts into this one.
  model_->clear();
  evalPath_.clear();
  refreshPending_ = false;
  clearTable();
  for (auto* combo : modelCombo_) combo->clear();  // the previous lab's models
  filter_->setCurrentIndex(0);
  model_->setFilter(ReviewModel::All);
  store_ = open ? std::make_unique<eval::EvalStore>(*session_->store()) : nullptr;
  model_->setStore(store_.get());
  openEval_->setEnabled(open);
  importOutputs_->setEnabled(open && !evalPath_.isEmpty());
  status_->setText(open ? tr("Open an eval set to review its outputs.") : tr("Open a lab to review outputs."));
  if (!open) return;
  // Reopen the eval set this lab was last reviewed with (loads on the worker thread).
  const QString last = QString::fromStdString(store_->setting(kEvalSetting));
  if (!last.isEmpty() && QFileInfo::exists(last)) loadEval(last);
}

void ReviewPanel::onLabDataChanged() {
  if (!store_ || evalPath_.isEmpty() || !model_->snapshot()) return;
  if (worker_) {
    refreshPending_ = true;
    return;
  }
  try {
    if (store_->changeStamp() == model_->snapshot()->stamp) return;
  } catch (const std::exception& e) {
    status_->setText(QString::fromStdString(e.what()));
    return;
  }
  refreshing_ = true;
  loadEval(evalPath_);
}

void ReviewPanel::chooseEval() {
  const QString path = FileDialog::openFile(this, tr("Eval Set"), session_->path(), tr("JSON Lines (*.jsonl)"));
  if (!path.isEmpty()) loadEval(path);
}

void ReviewPanel::chooseOutputs() {
  const QString path = FileDialog::openFile(this, tr("Outputs"), session_->path(), tr("JSON Lines (*.jsonl)"));
  if (!path.isEmpty()) loadEval(evalPath_, path);
}

void ReviewPanel::loadEval(const QString& evalPath, const QString& importOutputs) {
  if (worker_ || !session_->isOpen()) return;
  evalPath_ = evalPath;
  progress_->show();
  status_->setText(importOutputs.isEmpty() ? tr("Checking outputs…") : tr("Importing and checking outputs…"));
  const std::string lab = session_->path().toStdString(), e = evalPath.toStdString(), o = importOutputs.toStdString();
  worker_ = QThread::create([this, lab, e, o] {
    std::shared_ptr<ReviewSnapshot> snap;
    QString error;
    try {
      snap = loadReviewSnapshot(lab, e, o);
    } catch (const std::exception& ex) {
      error = QString::fromStdString(ex.what());
    }
    QMetaObject::invokeMethod(this, [this, snap, error] { onLoaded(snap, error); }, Qt::QueuedConnection);
  });
  connect(worker_, &QThread::finished, worker_, &QObject::deleteLater);
  worker_->start();
}

void ReviewPanel::onLoaded(std::shared_ptr<ReviewSnapshot> snapshot, const QString& error) {
  worker_->wait();
  worker_ = nullptr;
  const bool refresh = std::exchange(refreshing_, false);
  progress_->hide();
  importOutputs_->setEnabled(session_->isOpen() && !evalPath_.isEmpty());
  if (!snapshot) {
    status_->setText(error);
    emit loaded(false, error);
    return;
  }
  renderedQuestion_ = -1;
  if (refresh) model_->refreshSnapshot(std::move(snapshot));
  else model_->setSnapshot(std::move(snapshot));
  fillModelCombos();
  const auto* s = model_->snapshot();
  status_->setText(tr("%1 questions, %2 outputs of %3 models · eval %4")
                       .arg(s->evalSet.questions.size())
                       .arg(s->records.size())
                       .arg(s->models.size())
                       .arg(QString::fromStdString(s->evalSet.sha256.substr(0, 12))));
  refreshTable();
  try {
    if (store_) store_->setSetting(kEvalSetting, evalPath_.toStdString());
  } catch (const std::exception& e) {
    status_->setText(QString::fromStdString(e.what()));
  }
  emit loaded(true, {});
  if (std::exchange(refreshPending_, false)) onLabDataChanged();
}

void ReviewPanel::fillModelCombos() {
  for (int i = 0; i < 2; ++i) {
    modelCombo_[i]->clear();
    for (const auto& m : model_->snapshot()->models) modelCombo_[i]->addItem(QString::fromStdString(m));
    modelCombo_[i]->setCurrentText(model_->compared(i));
  }
}

void ReviewPanel::render(int q) {
  const auto* s = model_->snapshot();
  if (!s || q < 0) {
    question_->clear();
    contexts_->clear();
    diff_->clear();
    renderedQuestion_ = -1;
    for (int side = 0; side < 2; ++side) {
      outputs_[side]->clear();
      quotes_[side]->clear();
      titles_[side]->clear();
      outputMarks_[side].clear();
      contextMarks_[side].clear();
    }
    return;
  }
  const auto& question = s->evalSet.questions[static_cast<size_t>(q)];
  if (q != renderedQuestion_) {  // the contexts are the heavy part; skip them when only sides change
    question_->setText(QString::fromStdString(question.id + " — " + question.question));
    contextsText_ = contextsText(question);
    contexts_->setPlainText(contextsText_.text);
    renderedQuestion_ = q;
  }
  QList<QTextEdit::ExtraSelection> contextMarks;
  for (int side = 0; side < 2; ++side) renderSide(side, contextMarks);
  contexts_->setExtraSelections(contextMarks);
  const int a = model_->sampleIndex(ReviewModel::A), b = model_->sampleIndex(ReviewModel::B);
  diff_->setHtml(a >= 0 && b >= 0 && a != b ? diffHtml(eval::diffOutputs(s->records[a].output, s->records[b].output))
                                            : QString());
  renderTitles();
  const int row = model_->currentRow();
  if (row >= 0 && questions_->currentIndex().row() != row) questions_->setCurrentIndex(model_->index(row, 0));
}

void ReviewPanel::renderSide(int side, QList<QTextEdit::ExtraSelection>& contextMarks) {
  const auto* s = model_->snapshot();
  const int rec = model_->sampleIndex(static_cast<ReviewModel::Side>(side));
  outputMarks_[side].clear();
  contextMarks_[side].clear();
  quotes_[side]->clear();
  if (rec < 0) {
    outputs_[side]->setPlainText(tr("(no output)"));
    outputs_[side]->setExtraSelections({});
    return;
  }
  const auto& sample = s->report.samples[static_cast<size_t>(rec)];
  const OutputText text = outputText(sample);
  outputs_[side]->setPlainText(text.text);
  outputMarks_[side] = text.quotes;
  QList<QTextEdit::ExtraSelection> marks;
  for (const auto& h : text.quotes) marks.push_back(mark(outputs_[side], h));
  outputs_[side]->setExtraSelections(marks);
  const auto& question = s->evalSet.questions[static_cast<size_t>(model_->currentQuestion())];
  contextMarks_[side] = contextHighlights(contextsText_, question, sample);
  for (const auto& h : contextMarks_[side]) contextMarks.push_back(mark(contexts_, h));
  for (int i = 0; i < static_cast<int>(sample.quotes.size()); ++i) {
    const auto& m = sample.quotes[static_cast<size_t>(i)].match;
    QString where = m.context >= 0 ? tr(" · context %1").arg(m.context + 1) : QString();
    const std::string note = eval::quoteMatchNote(m);
    const QString kind = QString(eval::quoteKindName(m.kind)) + (note.empty() ? QString() : QString(" (%1)").arg(QString::fromStdString(note)));
    auto* item = new QListWidgetItem(QString("%1%2: %3").arg(kind, where,
                                                             QString::fromStdString(sample.quotes[static_cast<size_t>(i)].quote)));
    item->setToolTip(quoteRuleText());
    item->setBackground(background(m.kind));
    item->setData(Qt::UserRole, i);
    quotes_[side]->addItem(item);
  }
}

void ReviewPanel::renderTitles() {
  const auto* s = model_->snapshot();
  if (!s) return;
  const QString pair = model_->pairVerdict(model_->currentQuestion());
  for (int side = 0; side < 2; ++side) {
    const int rec = model_->sampleIndex(static_cast<ReviewModel::Side>(side));
    QString text = (side == side_ ? "▶ " : "") + model_->sideLabel(static_cast<ReviewModel::Side>(side));
    if (rec >= 0) {
      const auto& sample = s->report.samples[static_cast<size_t>(rec)];
      text += tr(" · format %1").arg(eval::formatKindName(sample.format.kind));
      if (const QString h = model_->verdictOf(rec, "human"); !h.isEmpty()) text += tr(" · you: %1").arg(h);
    }
    if (!pair.isEmpty()) text += pair == "parity" ? tr(" · parity") : (pair == (side == 0 ? "A" : "B") ? tr(" · better") : "");
    titles_[side]->setText(text);
  }
}

void ReviewPanel::refreshTable() {
  const auto* snap = model_->snapshot();
  if (!snap) {
    clearTable();
    return;
  }
  const eval::InstrumentTable t = snap->instrumentTable();
  const InstrumentGrid grid = instrumentGrid(t, model_->blind());
  table_->clear();
  table_->setRowCount(grid.rows.size());
  table_->setColumnCount(grid.columns.size());
  table_->setHorizontalHeaderLabels(grid.columns);
  table_->setVerticalHeaderLabels(grid.rows);
  for (int c = 0; c < grid.columns.size(); ++c)
    table_->horizontalHeaderItem(c)->setToolTip(grid.columnTips.value(c));
  for (int r = 0; r < grid.rows.size(); ++r)
    for (int c = 0; c < grid.columns.size(); ++c) {
      auto* item = new QTableWidgetItem(grid.cells[r][c]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, c, item);
    }
  agreement_->setText(grid.agreement);
  fitTableHeight();
}

void ReviewPanel::clearTable() {
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
  agreement_->clear();
  fitTableHeight();
}

// The instruments table keeps room for its header and up to three models' rows whole (two
// while it is empty), plus the horizontal scroll bar when its columns are wider than it is:
// more models scroll, none is cut in half. Measured from the filled table (an empty
// header has no height), again when the table's width changes.
void ReviewPanel::fitTableHeight() {
  auto* columns = table_->horizontalHeader();
  auto* rows = table_->verticalHeader();
  table_->resizeColumnsToContents();
  table_->resizeRowsToContents();
  const int rowHeight = table_->rowCount() > 0 ? rows->sectionSize(0) : rows->defaultSectionSize();
  const int headerHeight = table_->columnCount() > 0 ? columns->sizeHint().height() : rowHeight;
  int height = headerHeight + std::max(2, std::min(3, table_->rowCount())) * rowHeight + 2 * table_->frameWidth();
  const int contentWidth = rows->sizeHint().width() + columns->length() + 2 * table_->frameWidth();
  if (table_->columnCount() > 0 && contentWidth > table_->width())
    height += table_->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, table_);
  if (height != table_->minimumHeight()) table_->setMinimumHeight(height);
}

// The question takes the width the models leave. Each model column shows the model's name
// in full when the question keeps at least half the list (and 240 px); else it is as wide
// as its four dots, with its name elided in the header (in full in the header's tooltip).
void ReviewPanel::fitQuestionColumns() {
  auto* header = questions_->header();
  if (header->count() == 0) return;
  header->setSectionResizeMode(0, QHeaderView::Stretch);
  const int dots = ReviewModel::kDotsWidth + 2 * questions_->style()->pixelMetric(QStyle::PM_FocusFrameHMargin) + 12;
  const int margins = 2 * questions_->style()->pixelMetric(QStyle::PM_HeaderMargin) + 2;
  QStringList names;
  int fullWidth = 0;
  for (int c = 1; c < header->count(); ++c) {
    names << model_->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString();
    fullWidth += std::max(dots, header->fontMetrics().horizontalAdvance(names.back()) + margins + 8);
  }
  const int room = questions_->viewport()->width();
  const bool full = room - fullWidth >= std::max(240, room / 2);
  QStringList labels;  // names that do not fit lose their start ("…base", "…lora"): they differ at the end more often
  for (int c = 1; c < header->count(); ++c) {
    const QString& name = names[c - 1];
    const int width = full ? std::max(dots, header->fontMetrics().horizontalAdvance(name) + margins + 8) : dots;
    header->setSectionResizeMode(c, QHeaderView::Fixed);
    header->resizeSection(c, width);
    labels << (full ? name : header->fontMetrics().elidedText(name, Qt::ElideLeft, dots - margins));
  }
  model_->setModelHeaderLabels(labels);
}

bool ReviewPanel::jumpToQuote(int side, int quote) {
  for (const auto& h : contextMarks_[side]) {
    if (h.quote != quote) continue;
    QTextCursor c(contexts_->document());
    c.setPosition(h.start);
    c.setPosition(h.start + h.length, QTextCursor::KeepAnchor);
    contexts_->setTextCursor(c);
    contexts_->centerCursor();
    return true;
  }
  return false;
}

void ReviewPanel::onOutputClicked(int side) {
  const int pos = outputs_[side]->textCursor().position();
  for (const auto& h : outputMarks_[side])
    if (pos >= h.start && pos <= h.start + h.length) {
      jumpToQuote(side, h.quote);
      return;
    }
}

void ReviewPanel::startComment() {
  if (model_->sampleIndex(static_cast<ReviewModel::Side>(side_)) < 0) return;
  comment_->clear();
  comment_->show();
  comment_->setFocus();
}

void ReviewPanel::saveComment() {
  if (model_->requestComment(static_cast<ReviewModel::Side>(side_), comment_->text())) status_->setText(tr("Comment saved."));
  comment_->hide();
  questions_->setFocus();
}

bool ReviewPanel::handleKey(int key) {
  using S = ReviewModel::Side;
  if (busy()) return key == Qt::Key_J || key == Qt::Key_K || key == Qt::Key_1 || key == Qt::Key_2 ||
                     key == Qt::Key_Equal || key == Qt::Key_A || key == Qt::Key_R || key == Qt::Key_S ||
                     key == Qt::Key_C || key == Qt::Key_U;  // swallowed: the samples are being replaced
  switch (key) {
    case Qt::Key_J: model_->requestMove(+1); return true;
    case Qt::Key_K: model_->requestMove(-1); return true;
    case Qt::Key_1: model_->requestPairVerdict(S::A); return true;
    case Qt::Key_2: model_->requestPairVerdict(S::B); return true;
    case Qt::Key_Equal: model_->requestPairVerdict(std::nullopt); return true;
    case Qt::Key_A:
    case Qt::Key_R:
      if (model_->requestSampleVerdict(static_cast<S>(side_), key == Qt::Key_A) && side_ == 0) side_ = 1;
      renderTitles();
      return true;
    case Qt::Key_S: side_ = 1 - side_; renderTitles(); return true;
    case Qt::Key_C: startComment(); return true;
    case Qt::Key_U: model_->requestUndo(); return true;
    default: return false;
  }
}

bool ReviewPanel::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Resize) {
    if (watched == questions_->viewport()) fitQuestionColumns();
    else if (watched == table_) fitTableHeight();
  }
  if (event->type() == QEvent::KeyPress && watched != comment_) {
    auto* k = static_cast<QKeyEvent*>(event);
    if ((k->modifiers() & ~(Qt::KeypadModifier | Qt::ShiftModifier)) == Qt::NoModifier && handleKey(k->key())) return true;
  }
  return QWidget::eventFilter(watched, event);
}

void ReviewPanel::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape && comment_->isVisible()) {
    comment_->hide();
    return;
  }
  if (!handleKey(event->key())) QWidget::keyPressEvent(event);
}

}  // namespace crosslab::widgets
