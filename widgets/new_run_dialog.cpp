#include "widgets/new_run_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "widgets/file_dialogs.h"

namespace crosslab::widgets {
namespace {

QSpinBox* spin(int lo, int hi, int value) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setValue(value);
  return s;
}

QDoubleSpinBox* dspin(double lo, double hi, double value, int decimals, double step) {
  auto* s = new QDoubleSpinBox;
  s->setRange(lo, hi);
  s->setDecimals(decimals);
  s->setSingleStep(step);
  s->setValue(value);
  return s;
}

QWidget* withBrowse(QLineEdit* edit, QWidget* parent, bool folder) {
  auto* w = new QWidget(parent);
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(edit);
  auto* b = new QPushButton(QObject::tr("Browse…"), w);
  QObject::connect(b, &QPushButton::clicked, w, [edit, w, folder] {
    const QString p = folder ? FileDialog::existingFolder(w, QObject::tr("Choose folder"), edit->text())
                             : FileDialog::openFile(w, QObject::tr("Choose file"), edit->text());
    if (!p.isEmpty()) edit->setText(p);
  });
  l->addWidget(b);
  return w;
}

QString shellQuote(const QString& s) {
  static const QRegularExpression safe("^[A-Za-z0-9_./:=,+-]+$");
  if (safe.match(s).hasMatch()) return s;
  QString q = s;
  q.replace("'", "'\\''");
  return "'" + q + "'";
}

}  // namespace

NewRunDialog::NewRunDialog(const QString& labPath, QWidget* parent) : QDialog(parent), labPath_(labPath) {
  setWindowTitle(tr("New Training Run"));
  setObjectName("newRunDialog");
  const train::Recipe d = train::Recipe::labDefaults();

  name_ = new QLineEdit(QDateTime::currentDateTime().toString("'lora-'yyyyMMdd-HHmmss"), this);
  model_ = new QLineEdit(this);
  model_->setPlaceholderText(tr("Hugging Face model folder (config.json, *.safetensors, tokenizer.json)"));
  data_ = new QLineEdit(this);
  data_->setPlaceholderText(tr("alpaca/sharegpt JSON(L) file, or a folder with dataset_info.json"));
  name_->setObjectName("runName");
  model_->setObjectName("baseModel");
  data_->setObjectName("trainingData");
  dataset_ = new QLineEdit(this);
  dataset_->setPlaceholderText(tr("dataset name(s) in dataset_info.json (folders only)"));

  rank_ = spin(1, 1024, d.loraRank);
  alpha_ = spin(1, 4096, d.loraAlpha);
  auto* targetsBox = new QWidget(this);
  auto* tl = new QHBoxLayout(targetsBox);
  tl->setContentsMargins(0, 0, 0, 0);
  for (const char* t : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}) {
    auto* c = new QCheckBox(QString(t).remove("_proj"), targetsBox);
    c->setObjectName(t);
    c->setChecked(true);
    targets_ << c;
    tl->addWidget(c);
  }
  lr_ = dspin(1e-7, 1.0, d.learningRate, 7, 1e-5);
  epochs_ = dspin(0.01, 1000, d.numTrainEpochs, 2, 1);
  micro_ = spin(1, 1024, d.perDeviceTrainBatchSize);
  accum_ = spin(1, 4096, d.gradientAccumulationSteps);
  cutoff_ = spin(16, 1 << 20, d.cutoffLen);
  scheduler_ = new QComboBox(this);
  scheduler_->addItems({"linear", "cosine", "constant"});
  warmup_ = dspin(0, 0.99, d.warmupRatio, 3, 0.01);
  dtype_ = new QComboBox(this);
  dtype_->addItems({"bf16", "f32"});
  seed_ = spin(0, 1 << 30, int(d.seed));
  logging_ = spin(1, 100000, d.loggingSteps);
  save_ = spin(0, 100000, d.saveSteps);

  auto* form = new QFormLayout;
  form->addRow(tr("Run name"), name_);
  form->addRow(tr("Base model"), withBrowse(model_, this, true));
  form->addRow(tr("Training data"), withBrowse(data_, this, false));
  form->addRow(tr("Dataset"), dataset_);
  form->addRow(tr("LoRA rank / alpha"), [&] {
    auto* w = new QWidget(this);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(rank_);
    l->addWidget(alpha_);
    return w;
  }());
  form->addRow(tr("Targets"), targetsBox);
  form->addRow(tr("Learning rate"), lr_);
  form->addRow(tr("Epochs"), epochs_);
  form->addRow(tr("Micro-batch × accumulation"), [&] {
    auto* w = new QWidget(this);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(micro_);
    l->addWidget(accum_);
    return w;
  }());
  form->addRow(tr("Cutoff (tokens)"), cutoff_);
  form->addRow(tr("Scheduler / warmup"), [&] {
    auto* w = new QWidget(this);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(scheduler_);
    l->addWidget(warmup_);
    return w;
  }());
  form->addRow(tr("Precision"), dtype_);
  form->addRow(tr("Seed"), seed_);
  form->addRow(tr("Log / checkpoint every"), [&] {
    auto* w = new QWidget(this);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(logging_);
    l->addWidget(save_);
    return w;
  }());

  problems_ = new QLabel(this);
  problems_->setObjectName("problems");
  problems_->setStyleSheet("color: #d32f2f;");
  problems_->setWordWrap(true);

  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  command_ = new QPlainTextEdit(this);
  command_->setObjectName("commandPreview");
  command_->setReadOnly(true);
  command_->setFont(mono);
  yaml_ = new QPlainTextEdit(this);
  yaml_->setObjectName("yamlPreview");
  yaml_->setReadOnly(true);
  yaml_->setFont(mono);
  auto* previews = new QTabWidget(this);
  previews->addTab(command_, tr("Command line"));
  previews->addTab(yaml_, tr("LLaMA-Factory YAML"));

  buttons_ = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  auto* start = buttons_->addButton(tr("Start"), QDialogButtonBox::AcceptRole);
  start->setObjectName("startButton");
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* left = new QVBoxLayout;
  left->addLayout(form);
  left->addWidget(problems_);
  auto* top = new QHBoxLayout;
  top->addLayout(left, 3);
  top->addWidget(previews, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(buttons_);
  resize(1050, 620);

  // Every edit re-validates and refreshes the previews.
  for (auto* e : {name_, model_, data_, dataset_}) connect(e, &QLineEdit::textChanged, this, &NewRunDialog::updatePreview);
  for (auto* s : {rank_, alpha_, micro_, accum_, cutoff_, seed_, logging_, save_})
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &NewRunDialog::updatePreview);
  for (auto* s : {lr_, epochs_, warmup_})
    connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &NewRunDialog::updatePreview);
  for (auto* c : {scheduler_, dtype_}) connect(c, &QComboBox::currentTextChanged, this, &NewRunDialog::updatePreview);
  for (auto* c : targets_) connect(c, &QCheckBox::toggled, this, &NewRunDialog::updatePreview);
  updatePreview();
}

void NewRunDialog::setModelPath(const QString& p) { model_->setText(p); }
void NewRunDialog::setDataPath(const QString& p) { data_->setText(p); }
QString NewRunDialog::runName() const { return name_->text().trimmed(); }
QString NewRunDialog::dataPath() const { return data_->text().trimmed(); }
QString NewRunDialog::runDir() const { return QDir(labPath_).filePath("runs/" + runName()); }

train::Recipe NewRunDialog::recipe() const {
  train::Recipe r = train::Recipe::labDefaults();
  r.modelPath = model_->text().trimmed().toStdString();
  r.dataset = dataset_->text().trimmed().toStdString();
  r.loraRank = rank_->value();
  r.loraAlpha = alpha_->value();
  r.loraTargets.clear();
  for (auto* c : targets_)
    if (c->isChecked()) r.loraTargets.push_back(c->objectName().toStdString());
  r.learningRate = lr_->value();
  r.numTrainEpochs = epochs_->value();
  r.perDeviceTrainBatchSize = micro_->value();
  r.gradientAccumulationSteps = accum_->value();
  r.cutoffLen = cutoff_->value();
  r.lrSchedulerType = scheduler_->currentText().toStdString();
  r.warmupRatio = warmup_->value();
  r.dtype = dtype_->currentText().toStdString();
  r.seed = static_cast<std::uint64_t>(seed_->value());
  r.loggingSteps = logging_->value();
  r.saveSteps = save_->value();
  r.outputDir = runDir().toStdString();
  return r;
}

QStringList NewRunDialog::problems() const {
  QStringList out;
  if (runName().isEmpty() || runName().contains('/')) out << tr("the run needs a name without '/'");
  if (model_->text().trimmed().isEmpty()) out << tr("choose a base model folder");
  if (dataPath().isEmpty()) out << tr("choose training data");
  for (const auto& p : recipe().validate()) out << QString::fromStdString(p);
  return out;
}

QStringList NewRunDialog::cliArguments() const {
  const train::Recipe r = recipe();
  QStringList targets;
  for (const auto& t : r.loraTargets) targets << QString::fromStdString(t);
  QStringList a = {"train", "--model", model_->text().trimmed(), "--data", dataPath()};
  if (!dataset_->text().trimmed().isEmpty()) a << "--dataset" << dataset_->text().trimmed();
  a << "--lora-rank" << QString::number(r.loraRank) << "--lora-alpha" << QString::number(r.loraAlpha)
    << "--lora-target" << (targets.size() == 7 ? QString("all") : targets.join(','))
    << "--learning-rate" << QString::number(r.learningRate) << "--num-train-epochs" << QString::number(r.numTrainEpochs)
    << "--per-device-train-batch-size" << QString::number(r.perDeviceTrainBatchSize)
    << "--gradient-accumulation-steps" << QString::number(r.gradientAccumulationSteps)
    << "--cutoff-len" << QString::number(r.cutoffLen) << "--lr-scheduler-type" << scheduler_->currentText()
    << "--warmup-ratio" << QString::number(r.warmupRatio) << "--logging-steps" << QString::number(r.loggingSteps)
    << "--save-steps" << QString::number(r.saveSteps) << "--seed" << QString::number(r.seed)
    << "--dtype" << dtype_->currentText() << "--out" << runDir() << "--lab" << labPath_;
  return a;
}

void NewRunDialog::updatePreview() {
  const QStringList problems = this->problems();
  problems_->setText(problems.isEmpty() ? QString() : "• " + problems.join("\n• "));
  for (auto* b : buttons_->buttons())
    if (buttons_->buttonRole(b) == QDialogButtonBox::AcceptRole) b->setEnabled(problems.isEmpty());
  QStringList quoted;
  for (const auto& a : cliArguments()) quoted << shellQuote(a);
  command_->setPlainText("crosslab-cli " + quoted.join(' '));
  const auto r = recipe();
  yaml_->setPlainText(r.validate().empty() ? QString::fromStdString(train::recipeToLlamaFactoryYaml(r))
                                           : tr("(fix the recipe to see the YAML)"));
}

}  // namespace crosslab::widgets
