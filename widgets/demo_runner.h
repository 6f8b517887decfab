#pragma once
// First start: fills the demo lab by running `crosslab-cli demo PATH` as a child process
// (data, tokenizer, pretrained base model, first LoRA run, eval) behind a progress dialog.
// The GUI thread only reads the child's progress lines; Cancel stops the child.

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QStringList>

class QProgressDialog;
class QWidget;

namespace crosslab::widgets {

class DemoRunner : public QObject {
  Q_OBJECT
 public:
  DemoRunner(const QString& labPath, bool quick, QWidget* parent);
  ~DemoRunner() override;

  void start();
  QStringList lastLines() const { return lines_; }

 signals:
  // ok: the demo finished; otherwise `reason` says why (cancelled, exit code, last line).
  void finished(bool ok, const QString& reason);

 private:
  void onOutput();
  void onFinished(int exitCode, QProcess::ExitStatus status);

  QString labPath_;
  bool quick_;
  QPointer<QProcess> process_;
  QPointer<QProgressDialog> dialog_;
  QStringList lines_;
  bool cancelled_ = false;
};

}  // namespace crosslab::widgets
