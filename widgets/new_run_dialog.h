#pragma once
// New Run: what to train and where. Proposes the lab's own base models and training sets
// and the last choice; "Start from" reuses an earlier run's recipe in one click; the
// recipe is a form built from the recipe's field table; *Where* is this machine or a box
// of the lab (engine: crosslab, or LLaMA-Factory + DeepSpeed), and a box shows its
// preflight (weights complete and hashed, to push or there, fit, disk, secrets) before
// Start. Start stays disabled, with the reason shown, while anything would make the run
// fail or write over another: a name the lab already has, a model folder that is not a
// complete checkpoint, training data that cannot be read.

#include <QDialog>
#include <QPointer>
#include <optional>
#include <QStringList>

#include "core/train/recipe.h"
#include "core/venues/venue_store.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QDialogButtonBox;
class QTabWidget;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class RecipeForm;

struct NewRunChoice {
  QString name;
  train::Recipe recipe;     // local paths: model folder, data file; output_dir = the lab's runs/<name>
  QString dataPath;         // the training data (file or folder)
  std::optional<venues::BoxRow> box;  // nullopt: this machine
  QString engine = "crosslab";        // crosslab | llamafactory
  QString boxFolder;        // on the box: runs/<name> and models/<model> go under it
};

class NewRunDialog : public QDialog {
  Q_OBJECT
 public:
  explicit NewRunDialog(backends::LabSession* session, QWidget* parent = nullptr);
  ~NewRunDialog() override;

  NewRunChoice choice() const;
  train::Recipe recipe() const;
  QStringList problems() const;
  QString runName() const;
  QString runDir() const;
  // The lab's runs/<name> and the command a local run starts with.
  QStringList cliArguments() const;

  void setModelPath(const QString& p);
  void setDataPath(const QString& p);
  // Fills the form from a recipe (model and data too, when they exist here).
  void loadRecipe(const train::Recipe& r);
  // "Start from" the recipe of the lab's run `runId` (the panel's Reuse Recipe).
  void startFrom(qint64 runId);

 private slots:
  void updatePreview();
  void onSourceChosen(int index);
  void onWhereChanged();
  void runPreflight();

 private:
  void fillSources();
  void applyLastChoice();
  QString preflightKey() const;

  backends::LabSession* session_;
  QString labPath_;
  std::vector<venues::BoxRow> boxes_;
  QComboBox* source_;
  QLineEdit* name_;
  QComboBox* where_;
  QComboBox* engine_;
  QLineEdit* boxFolder_;
  QComboBox* model_;
  QComboBox* data_;
  RecipeForm* form_;
  QLabel* problems_;
  QPushButton* preflightButton_;
  QPlainTextEdit* preflight_;
  QPlainTextEdit* command_;
  QPlainTextEdit* yaml_;
  QTabWidget* previews_;
  QDialogButtonBox* buttons_;
  QString preflightDoneFor_;  // preflightKey() of the last report without an error
  bool preflightRunning_ = false;
  bool shownBox_ = false;
};

}  // namespace crosslab::widgets
