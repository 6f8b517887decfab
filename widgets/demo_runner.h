#pragma once
// First start: fills the demo lab by running `crosslab-cli demo PATH` as a child process
// (data, tokenizer, pretrained base model, first LoRA run, eval). The GUI thread only reads
// the child's progress lines (core/demo/demo_progress.h) and turns them into a determinate
// count per stage; cancel() stops the child.

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QStringList>

#include <string>

#include "core/demo/demo_progress.h"

namespace crosslab::widgets {

class DemoRunner : public QObject {
  Q_OBJECT
 public:
  DemoRunner(const QString& labPath, bool quick, QObject* parent);
  ~DemoRunner() override;

  void start();
  void cancel();
  QStringList lastLines() const { return lines_; }
  QProcess* process() const { return process_; }

 signals:
  void outputLine(const QString& line);
  // The lab folder and its store exist: the window can open it while the demo fills it.
  void labCreated();
  // A demo phase began: "lab", "data", "tokenizer", "base model", "pretrain", "lora", "eval base", "eval lora".
  void phaseBegan(const QString& phase);
  // `stage` (demo::DemoStage) has `done` of `total` steps; total > 0.
  void stageProgress(int stage, int done, int total);
  void stageFinished(int stage);
  // ok: the demo finished; otherwise `reason` says why (cancelled, exit code, last line).
  void finished(bool ok, const QString& reason);

 private:
  void onOutput();
  void onLine(const QString& line);
  void onProgress(const demo::DemoProgress& p);
  void onFinished(int exitCode, QProcess::ExitStatus status);

  QString labPath_;
  bool quick_;
  QPointer<QProcess> process_;
  QStringList lines_;
  QByteArray partial_;  // output after the last newline
  std::string phase_;   // the phase begun last
  bool cancelled_ = false;
  bool loraRan_ = false;
  int tokenizerDone_ = 0;
  int evalBaseDone_ = 0, evalLoraDone_ = 0, evalTotal_ = 0;
};

}  // namespace crosslab::widgets
