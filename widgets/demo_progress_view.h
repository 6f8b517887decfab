#pragma once
// First start, above the panels while `crosslab-cli demo` builds the demo lab: one
// determinate bar per stage (tokenizer, pretraining n/300, LoRA n/111, evals n/60) with a
// line on what each stage does, the demo's last output line, and Cancel. Not modal: the
// panels stay usable, and the Training panel shows the LoRA run live while it trains.

#include <QFrame>

class QLabel;
class QProgressBar;
class QPushButton;

namespace crosslab::widgets {

class DemoProgressView : public QFrame {
  Q_OBJECT
 public:
  explicit DemoProgressView(QWidget* parent = nullptr);

  // stage: demo::DemoStage. Bars are objectNames demoStage0 … demoStage3.
  void setStageProgress(int stage, int done, int total);
  void setStageFinished(int stage);
  void setLastLine(const QString& line);
  QProgressBar* bar(int stage) const { return bars_[stage]; }

 signals:
  void cancelRequested();

 private:
  QProgressBar* bars_[4] = {};
  QLabel* notes_[4] = {};
  QLabel* lastLine_;
  QPushButton* cancel_;
};

}  // namespace crosslab::widgets
