#include "widgets/demo_progress_view.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/demo/demo_progress.h"

namespace crosslab::widgets {

DemoProgressView::DemoProgressView(QWidget* parent) : QFrame(parent) {
  setObjectName("demoProgress");
  setFrameShape(QFrame::StyledPanel);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(12, 8, 12, 8);
  outer->setSpacing(4);

  auto* head = new QHBoxLayout;
  auto* title = new QLabel(tr("<b>Building the demo lab</b> — the steps of a real lab, on a small model, on this "
                              "machine"),
                           this);
  title->setObjectName("demoTitle");
  title->setWordWrap(true);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("demoCancel");
  connect(cancel_, &QPushButton::clicked, this, &DemoProgressView::cancelRequested);
  head->addWidget(title, 1);
  head->addWidget(cancel_);
  outer->addLayout(head);

  const QString names[demo::kDemoStageCount] = {tr("Tokenizer"), tr("Pretraining"), tr("LoRA run"), tr("Evals")};
  const QString notes[demo::kDemoStageCount] = {
      tr("training set, byte-level BPE tokenizer, base model files"),
      tr("a small Llama base model learns the corpus"),
      tr("the lab recipe fine-tunes it — watch it live in Training"),
      tr("base and tuned model answer the frozen questions")};
  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(10);
  grid->setVerticalSpacing(2);
  for (int i = 0; i < demo::kDemoStageCount; ++i) {
    auto* name = new QLabel(names[i], this);
    bars_[i] = new QProgressBar(this);
    bars_[i]->setObjectName(QString("demoStage%1").arg(i));
    bars_[i]->setRange(0, 1);  // determinate from the start: 0 of 1 until the stage says its size
    bars_[i]->setValue(0);
    bars_[i]->setFormat(tr("waiting"));
    bars_[i]->setMinimumWidth(160);
    notes_[i] = new QLabel(notes[i], this);
    notes_[i]->setObjectName(QString("demoNote%1").arg(i));
    notes_[i]->setEnabled(false);  // the palette's secondary text
    grid->addWidget(name, i, 0);
    grid->addWidget(bars_[i], i, 1);
    grid->addWidget(notes_[i], i, 2);
  }
  grid->setColumnStretch(1, 2);
  grid->setColumnStretch(2, 3);
  outer->addLayout(grid);

  lastLine_ = new QLabel(this);
  lastLine_->setObjectName("demoLastLine");
  lastLine_->setEnabled(false);
  lastLine_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outer->addWidget(lastLine_);
}

void DemoProgressView::setStageProgress(int stage, int done, int total) {
  if (stage < 0 || stage >= demo::kDemoStageCount || total <= 0) return;
  auto* b = bars_[stage];
  b->setRange(0, total);
  b->setValue(std::min(done, total));
  b->setFormat(stage == int(demo::DemoStage::Tokenizer) ? tr("%v of %m parts") : tr("%v / %m"));
}

void DemoProgressView::setStageFinished(int stage) {
  if (stage < 0 || stage >= demo::kDemoStageCount) return;
  auto* b = bars_[stage];
  if (b->maximum() <= 1 && b->value() == 0) b->setRange(0, 1);
  b->setValue(b->maximum());
  b->setFormat(stage == int(demo::DemoStage::Tokenizer) || b->maximum() <= 1 ? tr("done") : tr("%v / %m — done"));
}

void DemoProgressView::setLastLine(const QString& line) {
  lastLine_->setText(fontMetrics().elidedText(line, Qt::ElideRight, std::max(200, width() - 30)));
}

}  // namespace crosslab::widgets
