#pragma once
// New training run: the recipe as a form (lab defaults, validated as you type), model and
// data pickers, and previews of the equivalent crosslab-cli command and LLaMA-Factory YAML.

#include <QDialog>
#include <QStringList>

#include "core/train/recipe.h"

class QLineEdit;
class QSpinBox;
class QDoubleSpinBox;
class QComboBox;
class QCheckBox;
class QPlainTextEdit;
class QLabel;
class QDialogButtonBox;

namespace crosslab::widgets {

class NewRunDialog : public QDialog {
  Q_OBJECT
 public:
  NewRunDialog(const QString& labPath, QWidget* parent = nullptr);

  train::Recipe recipe() const;
  QString runName() const;
  QString dataPath() const;
  // crosslab-cli arguments (without the program) that start this run.
  QStringList cliArguments() const;
  QStringList problems() const;

  void setModelPath(const QString& p);
  void setDataPath(const QString& p);

 private slots:
  void updatePreview();

 private:
  QString runDir() const;

  QString labPath_;
  QLineEdit* name_;
  QLineEdit* model_;
  QLineEdit* data_;
  QLineEdit* dataset_;
  QSpinBox* rank_;
  QSpinBox* alpha_;
  QList<QCheckBox*> targets_;
  QDoubleSpinBox* lr_;
  QDoubleSpinBox* epochs_;
  QSpinBox* micro_;
  QSpinBox* accum_;
  QSpinBox* cutoff_;
  QComboBox* scheduler_;
  QDoubleSpinBox* warmup_;
  QComboBox* dtype_;
  QSpinBox* seed_;
  QSpinBox* logging_;
  QSpinBox* save_;
  QLabel* problems_;
  QPlainTextEdit* command_;
  QPlainTextEdit* yaml_;
  QDialogButtonBox* buttons_;
};

}  // namespace crosslab::widgets
