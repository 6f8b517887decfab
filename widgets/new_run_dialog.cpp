#include "widgets/new_run_dialog.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QVBoxLayout>
#include <spdlog/spdlog.h>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "backends/remote/box_access.h"
#include "backends/remote/run_stage.h"
#include "backends/runs/run_inputs.h"
#include "core/store/lab_store.h"
#include "widgets/file_dialogs.h"
#include "widgets/recipe_form.h"

namespace crosslab::widgets {
namespace {

QString shellQuote(const QString& s) {
  static const QRegularExpression safe("^[A-Za-z0-9_./:=,+-]+$");
  if (safe.match(s).hasMatch()) return s;
  QString q = s;
  q.replace("'", "'\\''");
  return "'" + q + "'";
}

// An editable combo of the lab's own paths; its line edit is named too (what a user types into).
QComboBox* pathCombo(QWidget* parent, const QString& objectName, const QString& editName, const QString& placeholder) {
  auto* c = new QComboBox(parent);
  c->setEditable(true);
  c->setInsertPolicy(QComboBox::NoInsert);
  c->setObjectName(objectName);
  c->lineEdit()->setObjectName(editName);
  c->lineEdit()->setPlaceholderText(placeholder);
  c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  c->setMinimumContentsLength(24);
  return c;
}

QWidget* withBrowse(QComboBox* combo, QWidget* parent, bool folder) {
  auto* w = new QWidget(parent);
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(combo, 1);
  auto* b = new QPushButton(QObject::tr("Browse…"), w);
  QObject::connect(b, &QPushButton::clicked, w, [combo, w, folder] {
    const QString p = folder ? FileDialog::existingFolder(w, QObject::tr("Choose folder"), combo->currentText())
                             : FileDialog::openFile(w, QObject::tr("Choose file"), combo->currentText());
    if (!p.isEmpty()) combo->setCurrentText(p);
  });
  l->addWidget(b);
  return w;
}

// A readable training set costs a parse: remember the answer per file state.
struct DataCheck {
  QString key;
  QStringList problems;
  int examples = 0;
};
DataCheck& dataCache() {
  static DataCheck c;
  return c;
}

}  // namespace

NewRunDialog::NewRunDialog(backends::LabSession* session, QWidget* parent)
    : QDialog(parent), session_(session), labPath_(session->path()) {
  setWindowTitle(tr("New Training Run"));
  setObjectName("newRunDialog");

  source_ = new QComboBox(this);
  source_->setObjectName("recipeSource");
  source_->setToolTip(tr("Start from the lab's defaults, your last choice, or the recipe of an earlier run"));
  name_ = new QLineEdit(QDateTime::currentDateTime().toString("'lora-'yyyyMMdd-HHmmss"), this);
  name_->setObjectName("runName");
  where_ = new QComboBox(this);
  where_->setObjectName("where");
  where_->addItem(tr("This machine"));
  if (session_->isOpen()) {
    try {
      venues::VenueStore venues(*session_->store());
      for (const auto& b : venues.boxes()) {
        if (b.host.empty()) continue;
        boxes_.push_back(b);
        QString label = QString::fromStdString(b.name);
        if (b.gpuCount > 0) label += QString(" (%1× %2)").arg(b.gpuCount).arg(QString::fromStdString(b.gpuModel));
        if (b.pricePerHour) label += QString(", $%1/h").arg(*b.pricePerHour, 0, 'f', 2);
        where_->addItem(label, QString::fromStdString(b.name));
      }
    } catch (const std::exception& e) {
      spdlog::warn("boxes: {}", e.what());
    }
  }
  engine_ = new QComboBox(this);
  engine_->setObjectName("engine");
  engine_->addItem(tr("crosslab"), "crosslab");
  engine_->addItem(tr("LLaMA-Factory + DeepSpeed"), "llamafactory");
  boxFolder_ = new QLineEdit("crosslab", this);
  boxFolder_->setObjectName("boxFolder");
  boxFolder_->setToolTip(tr("Folder on the box (relative to its home): runs/<name> and models/<model> go under it"));
  model_ = pathCombo(this, "field_model_name_or_path", "baseModel", tr("Hugging Face model folder (config.json, *.safetensors, tokenizer.json)"));
  data_ = pathCombo(this, "field_dataset_file", "trainingData", tr("alpaca/sharegpt JSON(L) file, or a folder with dataset_info.json"));
  for (const auto& m : backends::labModels(labPath_)) model_->addItem(QDir(labPath_).relativeFilePath(m), m);
  for (const auto& d : backends::labTrainingSets(labPath_)) data_->addItem(QDir(labPath_).relativeFilePath(d), d);

  auto* basics = new QFormLayout;
  basics->addRow(tr("Start from"), source_);
  basics->addRow(tr("Run name"), name_);
  basics->addRow(tr("Where"), where_);
  basics->addRow(tr("Engine"), engine_);
  basics->addRow(tr("Folder on the box"), boxFolder_);
  basics->addRow(tr("Base model"), withBrowse(model_, this, true));
  basics->addRow(tr("Training data"), withBrowse(data_, this, false));

  form_ = new RecipeForm(this);
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName("recipeScroll");
  scroll->setWidget(form_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);

  problems_ = new QLabel(this);
  problems_->setObjectName("problems");
  problems_->setStyleSheet("color: #d32f2f;");
  problems_->setWordWrap(true);
  problems_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  preflightButton_ = new QPushButton(tr("Check the box"), this);
  preflightButton_->setObjectName("preflightButton");
  preflight_ = new QPlainTextEdit(this);
  preflight_->setObjectName("preflightReport");
  preflight_->setReadOnly(true);
  preflight_->setFont(mono);
  preflight_->setPlaceholderText(tr("Before a box starts billing: weights complete and hashed, to push or already "
                                    "there, fit on its GPUs, free disk, no secret leaving this machine."));
  auto* preflightTab = new QWidget(this);
  auto* pl = new QVBoxLayout(preflightTab);
  pl->addWidget(preflightButton_);
  pl->addWidget(preflight_, 1);
  command_ = new QPlainTextEdit(this);
  command_->setObjectName("commandPreview");
  command_->setReadOnly(true);
  command_->setFont(mono);
  yaml_ = new QPlainTextEdit(this);
  yaml_->setObjectName("yamlPreview");
  yaml_->setReadOnly(true);
  yaml_->setFont(mono);
  previews_ = new QTabWidget(this);
  previews_->setObjectName("newRunTabs");
  previews_->addTab(preflightTab, tr("Preflight"));
  previews_->addTab(command_, tr("Command line"));
  previews_->addTab(yaml_, tr("LLaMA-Factory YAML"));
  previews_->setCurrentIndex(1);

  buttons_ = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  auto* start = buttons_->addButton(tr("Start"), QDialogButtonBox::AcceptRole);
  start->setObjectName("startButton");
  connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
    if (problems().isEmpty()) accept();
  });
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* left = new QVBoxLayout;
  left->addLayout(basics);
  left->addWidget(scroll, 1);
  left->addWidget(problems_);
  auto* top = new QHBoxLayout;
  top->addLayout(left, 3);
  top->addWidget(previews_, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top, 1);
  layout->addWidget(buttons_);
  resize(1000, 660);

  fillSources();
  applyLastChoice();
  if (model_->currentText().isEmpty() && model_->count() > 0) model_->setCurrentIndex(0);
  if (data_->currentText().isEmpty() && data_->count() > 0) data_->setCurrentIndex(0);

  connect(name_, &QLineEdit::textChanged, this, &NewRunDialog::updatePreview);
  connect(boxFolder_, &QLineEdit::textChanged, this, &NewRunDialog::updatePreview);
  connect(model_, &QComboBox::currentTextChanged, this, &NewRunDialog::updatePreview);
  connect(data_, &QComboBox::currentTextChanged, this, &NewRunDialog::updatePreview);
  connect(engine_, qOverload<int>(&QComboBox::currentIndexChanged), this, &NewRunDialog::onWhereChanged);
  connect(where_, qOverload<int>(&QComboBox::currentIndexChanged), this, &NewRunDialog::onWhereChanged);
  connect(source_, qOverload<int>(&QComboBox::activated), this, &NewRunDialog::onSourceChosen);
  connect(form_, &RecipeForm::changed, this, &NewRunDialog::updatePreview);
  connect(preflightButton_, &QPushButton::clicked, this, &NewRunDialog::runPreflight);
  onWhereChanged();
}

NewRunDialog::~NewRunDialog() = default;

void NewRunDialog::fillSources() {
  source_->addItem(tr("Lab defaults"), QString());
  if (!session_->isOpen()) return;
  try {
    auto runs = session_->store()->runs();
    if (!runs.lastChoice().empty()) source_->addItem(tr("Last choice"), QStringLiteral("last"));
    for (const auto& r : runs.list())
      if (!r.recipeJson.empty())
        source_->addItem(tr("Recipe of %1 (%2)").arg(QString::fromStdString(r.name), QString::fromStdString(r.status)),
                         QString::number(r.id));
  } catch (const std::exception& e) {
    spdlog::warn("runs: {}", e.what());
  }
}

void NewRunDialog::applyLastChoice() {
  if (!session_->isOpen()) return;
  const auto j = QJsonDocument::fromJson(QByteArray::fromStdString(session_->store()->runs().lastChoice())).object();
  if (j.isEmpty()) return;
  source_->setCurrentIndex(source_->findData(QStringLiteral("last")));
  onSourceChosen(source_->currentIndex());
}

void NewRunDialog::onSourceChosen(int index) {
  const QString key = source_->itemData(index).toString();
  try {
    if (key.isEmpty()) {
      loadRecipe(train::Recipe::labDefaults());
    } else if (key == "last") {
      const auto j = QJsonDocument::fromJson(QByteArray::fromStdString(session_->store()->runs().lastChoice())).object();
      loadRecipe(train::recipeFromJson(QJsonDocument(j.value("recipe").toObject()).toJson().toStdString()));
      const int w = where_->findData(j.value("where").toString());
      if (w > 0) where_->setCurrentIndex(w);
      engine_->setCurrentIndex(std::max(0, engine_->findData(j.value("engine").toString())));
      if (!j.value("box_folder").toString().isEmpty()) boxFolder_->setText(j.value("box_folder").toString());
      if (!j.value("data").toString().isEmpty()) setDataPath(j.value("data").toString());
    } else if (const auto row = session_->store()->runs().byId(key.toLongLong())) {
      loadRecipe(train::recipeFromJson(row->recipeJson));
    }
  } catch (const std::exception& e) {
    problems_->setText(tr("could not read that recipe: %1").arg(e.what()));
  }
  updatePreview();
}

void NewRunDialog::startFrom(qint64 runId) {
  const int i = source_->findData(QString::number(runId));
  if (i < 0) return;
  source_->setCurrentIndex(i);
  onSourceChosen(i);
}

void NewRunDialog::loadRecipe(const train::Recipe& r) {
  form_->setRecipe(r);
  if (!r.modelPath.empty() && QFileInfo(QString::fromStdString(r.modelPath)).isDir())
    setModelPath(QString::fromStdString(r.modelPath));
  if (!r.datasetFile.empty() && QFileInfo::exists(QString::fromStdString(r.datasetFile)))
    setDataPath(QString::fromStdString(r.datasetFile));
}

void NewRunDialog::setModelPath(const QString& p) {
  const int i = model_->findData(QFileInfo(p).absoluteFilePath());
  if (i >= 0) model_->setCurrentIndex(i);
  else model_->setCurrentText(p);
}

void NewRunDialog::setDataPath(const QString& p) {
  const int i = data_->findData(QFileInfo(p).absoluteFilePath());
  if (i >= 0) data_->setCurrentIndex(i);
  else data_->setCurrentText(p);
}

QString NewRunDialog::runName() const { return name_->text().trimmed(); }
QString NewRunDialog::runDir() const { return QDir(labPath_).filePath("runs/" + runName()); }

// The path a combo names: the item's full path, or what was typed (relative to the lab).
static QString comboPath(const QComboBox* c, const QString& lab) {
  const int i = c->findText(c->currentText());
  if (i >= 0 && !c->itemData(i).toString().isEmpty()) return c->itemData(i).toString();
  const QString t = c->currentText().trimmed();
  if (t.isEmpty() || QDir::isAbsolutePath(t)) return t;
  return QDir(lab).absoluteFilePath(t);
}

train::Recipe NewRunDialog::recipe() const {
  train::Recipe r = train::Recipe::labDefaults();
  form_->applyTo(r, nullptr);
  r.modelPath = comboPath(model_, labPath_).toStdString();
  const QString dataPath = comboPath(data_, labPath_);
  if (QFileInfo(dataPath).isDir()) {
    r.datasetDir = dataPath.toStdString();
    r.datasetFile.clear();
  } else {
    r.datasetFile = dataPath.toStdString();
  }
  r.outputDir = runDir().toStdString();
  return r;
}

NewRunChoice NewRunDialog::choice() const {
  NewRunChoice c;
  c.name = runName();
  c.recipe = recipe();
  c.dataPath = comboPath(data_, labPath_);
  const int w = where_->currentIndex();
  if (w > 0 && size_t(w - 1) < boxes_.size()) c.box = boxes_[size_t(w - 1)];
  c.engine = c.box ? engine_->currentData().toString() : QStringLiteral("crosslab");
  c.boxFolder = boxFolder_->text().trimmed();
  return c;
}

QString NewRunDialog::preflightKey() const {
  const auto c = choice();
  return QString::fromStdString(train::recipeToJson(c.recipe)) + "|" + (c.box ? QString::fromStdString(c.box->name) : "") +
         "|" + c.engine + "|" + c.boxFolder;
}

QStringList NewRunDialog::problems() const {
  QStringList out;
  const QString name = runName();
  static const QRegularExpression bad("[/\\\\:]|^\\.");
  if (name.isEmpty() || bad.match(name).hasMatch()) out << tr("the run needs a name without '/', '\\' or ':'");
  else if (session_->isOpen()) {
    try {
      if (session_->store()->runs().byName(name.toStdString()))
        out << tr("the lab already has a run named '%1': choose another name (a run is never written over)").arg(name);
      else if (QFileInfo::exists(runDir()))
        out << tr("runs/%1 already exists in the lab: choose another name (a run is never written over)").arg(name);
    } catch (const std::exception& e) {
      out << QString::fromStdString(e.what());
    }
  }
  const auto c = choice();
  out << backends::modelProblems(QString::fromStdString(c.recipe.modelPath), c.engine == "llamafactory");
  // Reading the data costs a parse: once per file state.
  const QFileInfo info(c.dataPath);
  const QString key = c.dataPath + "|" + QString::fromStdString(c.recipe.dataset + "|" + c.recipe.formatting) + "|" +
                      QString::number(info.lastModified().toMSecsSinceEpoch()) + "|" + QString::number(info.size());
  auto& cache = dataCache();
  if (cache.key != key) {
    cache.key = key;
    cache.problems = backends::dataProblems(c.dataPath, QString::fromStdString(c.recipe.dataset),
                                            QString::fromStdString(c.recipe.formatting), &cache.examples);
  }
  out << cache.problems;
  if (c.box && info.isDir()) out << tr("on a box, choose one training data file (alpaca/sharegpt)");
  if (c.box && c.boxFolder.isEmpty()) out << tr("name a folder on the box");
  QStringList formProblems;
  train::Recipe r = train::Recipe::labDefaults();
  form_->applyTo(r, &formProblems);
  out << formProblems;
  for (const auto& p : c.recipe.validate()) out << QString::fromStdString(p);
  if (c.box && out.isEmpty() && preflightDoneFor_ != preflightKey())
    out << tr("check the box first (Preflight): the meter should not run for nothing");
  return out;
}

QStringList NewRunDialog::cliArguments() const {
  return {"train", "--recipe", runDir() + "/recipe.json", "--out", runDir(), "--lab", labPath_};
}

void NewRunDialog::onWhereChanged() {
  const bool box = where_->currentIndex() > 0;
  engine_->setEnabled(box);
  if (!box) engine_->setCurrentIndex(0);
  boxFolder_->setEnabled(box);
  preflightButton_->setEnabled(box && !preflightRunning_);
  form_->setGroupVisible("Venue", box);
  if (box != shownBox_) previews_->setCurrentIndex(box ? 0 : 1);  // a box: its preflight comes first
  shownBox_ = box;
  updatePreview();
}

void NewRunDialog::updatePreview() {
  const QStringList problems = this->problems();
  problems_->setText(problems.isEmpty() ? QString() : "• " + problems.join("\n• "));
  for (auto* b : buttons_->buttons())
    if (buttons_->buttonRole(b) == QDialogButtonBox::AcceptRole) b->setEnabled(problems.isEmpty());
  const auto c = choice();
  if (c.box) {
    command_->setPlainText(tr("On %1, in %2/runs/%3:\n%4 train …\n\n(the exact command is staged with the run)")
                               .arg(QString::fromStdString(c.box->name), c.boxFolder, c.name,
                                    c.engine == "crosslab" ? "crosslab-cli" : "llamafactory-cli"));
  } else {
    QStringList quoted;
    for (const auto& a : cliArguments()) quoted << shellQuote(a);
    command_->setPlainText("crosslab-cli " + quoted.join(' ') + "\n\n# recipe.json:\n" +
                           QString::fromStdString(train::recipeToJson(c.recipe)));
  }
  yaml_->setPlainText(c.recipe.validate().empty() ? QString::fromStdString(train::recipeToLlamaFactoryYaml(c.recipe))
                                                  : tr("(fix the recipe to see the YAML)"));
}

void NewRunDialog::runPreflight() {
  const auto c = choice();
  if (!c.box || preflightRunning_) return;
  preflightRunning_ = true;
  preflightButton_->setEnabled(false);
  preflight_->setPlainText(tr("checking %1 …").arg(QString::fromStdString(c.box->name)));
  const QString key = preflightKey();
  QPointer<NewRunDialog> self(this);
  auto* thread = QThread::create([self, c, key] {
    QString text;
    bool ok = false;
    try {
      ssh::SshSession session(remote::boxTarget(*c.box));
      session.connect();
      remote::SshShell host(session, c.box->name);
      QTemporaryDir stage;
      const std::string modelOnBox =
          c.boxFolder.toStdString() + "/models/" + QFileInfo(QString::fromStdString(c.recipe.modelPath)).fileName().toStdString();
      const std::string workDir = c.boxFolder.toStdString() + "/runs/" + c.name.toStdString();
      const auto staged = remote::stageRun(c.recipe, remote::engineFromString(c.engine.toStdString()), c.dataPath.toStdString(),
                                           modelOnBox, stage.path().toStdString(), c.recipe.launcher);
      const auto pf = remote::preflightOnBox(host, c.recipe.modelPath, c.recipe, c.engine == "llamafactory", modelOnBox,
                                             workDir, stage.path().toStdString(), staged.command);
      for (const auto& f : pf.report.findings)
        text += QString(f.level == venues::Finding::Level::Ok ? "ok       " : f.level == venues::Finding::Level::Warning ? "warning  " : "ERROR    ") +
                QString::fromStdString(f.check + ": " + f.message) + "\n";
      text += "\ncommand: " + QString::fromStdString(staged.command) + "\n";
      ok = !pf.report.blocked();
      text += ok ? tr("\nnothing blocks the run: Start is enabled.") : tr("\nan error blocks the run.");
    } catch (const std::exception& e) {
      text = tr("cannot check %1: %2").arg(QString::fromStdString(c.box->name), e.what());
    }
    QMetaObject::invokeMethod(qApp, [self, text, ok, key] {
      if (!self) return;
      self->preflightRunning_ = false;
      self->preflight_->setPlainText(text);
      self->preflightDoneFor_ = ok ? key : QString();
      self->onWhereChanged();
    });
  });
  connect(thread, &QThread::finished, thread, &QObject::deleteLater);
  thread->start();
}

}  // namespace crosslab::widgets
