#include "widgets/benchmarks_panel.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include "backends/bench/bench_process.h"
#include "backends/lab_session.h"
#include "core/bench/bench_store.h"
#include "widgets/bench_live_chart.h"
#include "widgets/bench_results_model.h"

namespace crosslab::widgets {

namespace {

// Writes through a temporary file: a failed export leaves no half-written file.
bool saveAtomically(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() && f.commit()) return true;
  if (error) *error = f.errorString();
  return false;
}

}  // namespace

BenchmarksPanel::BenchmarksPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), process_(new backends::BenchProcess(this)) {
  setObjectName("panel_benchmarks");
  // Inside a scroll area, so that the panel never forces the window's minimum size.
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* content = new QWidget(scroll);
  content->setMinimumSize(760, 520);
  auto* splitter = new QSplitter(Qt::Vertical, content);
  // Top: the form on the left, the live chart beside it; bottom: the lab's table.
  auto* top = new QWidget(splitter);
  auto* topLayout = new QHBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* form = buildForm();
  form->setMaximumWidth(440);
  topLayout->addWidget(form);
  live_ = new BenchLiveChart(top);
  topLayout->addWidget(live_, 1);
  splitter->addWidget(top);
  splitter->addWidget(buildResults());
  auto* contentLayout = new QVBoxLayout(content);
  contentLayout->addWidget(splitter);
  scroll->setWidget(content);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll);

  connect(process_, &backends::BenchProcess::levelStarted, this, &BenchmarksPanel::onLevelStarted);
  connect(process_, &backends::BenchProcess::tick, this,
          [this](int, double t, double agg, double per, int done, int failed, int planned) {
            lastT_ = timeOffset_ + t;
            live_->addRates(lastT_, agg, per);
            if (planned > 0) progress_->setValue(std::min(done, planned));
            if (failed > 0) setStatus(tr("%1 failed so far in this level").arg(failed));
          });
  connect(process_, &backends::BenchProcess::requestDone, this, [this](int, double t, double ttftMs, bool ok, const QString&) {
    if (ok) live_->addTtft(timeOffset_ + t, ttftMs);
  });
  connect(process_, &backends::BenchProcess::levelDone, this, [this](const QJsonObject& r) {
    const QString collapse = r.value("collapse").toString();
    setStatus(tr("c=%1: %2 tok/s aggregate, %3 tok/s per stream, %4 failed%5")
                  .arg(r.value("max_concurrency").toInt())
                  .arg(r.value("output_throughput").toDouble(), 0, 'f', 1)
                  .arg(r.value("per_stream_tok_s").toDouble(), 0, 'f', 1)
                  .arg(r.value("failed").toInt())
                  .arg(collapse.isEmpty() ? QString() : tr(" — %1").arg(collapse)));
    reload();
  });
  connect(process_, &backends::BenchProcess::finished, this, &BenchmarksPanel::onFinished);
  connect(session_, &backends::LabSession::labChanged, this, &BenchmarksPanel::reload);
  reload();
}

QWidget* BenchmarksPanel::buildForm() {
  auto* box = new QWidget(this);
  auto* form = new QFormLayout;
  url_ = new QLineEdit("http://127.0.0.1:8000", box);
  url_->setObjectName("url");
  url_->setToolTip(tr("OpenAI-compatible base URL (vLLM, crosslab-cli serve); remote boxes through an SSH tunnel"));
  model_ = new QLineEdit(box);
  model_->setObjectName("model");
  model_->setPlaceholderText(tr("model or adapter id"));
  endpoint_ = new QComboBox(box);
  endpoint_->setObjectName("endpoint");
  endpoint_->addItems({"completions", "chat"});
  levels_ = new QLineEdit("1,8,32,64", box);
  levels_->setObjectName("levels");
  numPrompts_ = new QSpinBox(box);
  numPrompts_->setObjectName("numPrompts");
  numPrompts_->setRange(0, 100000);
  numPrompts_->setSpecialValueText(tr("auto (2 × concurrency, ≥ 8)"));
  outputLen_ = new QSpinBox(box);
  outputLen_->setObjectName("outputLen");
  outputLen_->setRange(1, 1000000);
  outputLen_->setValue(512);
  price_ = new QDoubleSpinBox(box);
  price_->setObjectName("price");
  price_->setRange(0, 10000);
  price_->setDecimals(3);
  price_->setPrefix("$");
  price_->setSuffix(tr(" / h"));
  price_->setSpecialValueText(tr("no price"));
  label_ = new QLineEdit(box);
  label_->setObjectName("label");
  label_->setPlaceholderText(tr("venue / method, e.g. 1x MI300X, merged"));
  form->addRow(tr("Endpoint URL"), url_);
  form->addRow(tr("Model"), model_);
  form->addRow(tr("API"), endpoint_);
  form->addRow(tr("Concurrency levels"), levels_);
  form->addRow(tr("Requests per level"), numPrompts_);
  form->addRow(tr("Output tokens"), outputLen_);
  form->addRow(tr("Price"), price_);
  form->addRow(tr("Label"), label_);

  runButton_ = new QPushButton(tr("Run"), box);
  runButton_->setObjectName("runButton");
  stopButton_ = new QPushButton(tr("Stop"), box);
  stopButton_->setObjectName("stopButton");
  stopButton_->setEnabled(false);
  progress_ = new QProgressBar(box);
  progress_->setObjectName("progress");
  levelLabel_ = new QLabel(tr("idle"), box);
  levelLabel_->setObjectName("levelLabel");
  status_ = new QLabel(box);
  status_->setObjectName("statusLabel");
  status_->setWordWrap(true);
  connect(runButton_, &QPushButton::clicked, this, [this] { run(); });
  connect(stopButton_, &QPushButton::clicked, this, &BenchmarksPanel::stop);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(runButton_);
  buttons->addWidget(stopButton_);
  buttons->addStretch(1);
  auto* level = new QHBoxLayout;
  level->addWidget(levelLabel_);
  level->addWidget(progress_, 1);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->addLayout(form);
  v->addLayout(buttons);
  v->addLayout(level);
  v->addWidget(status_);
  v->addStretch(1);
  return box;
}

QWidget* BenchmarksPanel::buildResults() {
  auto* box = new QWidget(this);
  results_ = new BenchResultsModel(this);
  table_ = new QTableView(box);
  table_->setObjectName("resultsTable");
  table_->setModel(results_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &BenchmarksPanel::updateComparison);
  connect(results_, &QAbstractItemModel::modelReset, this, &BenchmarksPanel::updateComparison);

  bars_ = new QBarSeries;
  compare_ = new QChartView(box);
  compare_->setObjectName("compareChart");
  compare_->chart()->addSeries(bars_);
  compare_->chart()->setTitle(tr("Select rows to compare output tok/s per level"));
  compare_->setMinimumHeight(160);

  auto* csv = new QPushButton(tr("Export CSV…"), box);
  csv->setObjectName("exportCsv");
  auto* json = new QPushButton(tr("Export JSON…"), box);
  json->setObjectName("exportJson");
  connect(csv, &QPushButton::clicked, this, [this] { exportWithDialog(false); });
  connect(json, &QPushButton::clicked, this, [this] { exportWithDialog(true); });
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(csv);
  buttons->addWidget(json);

  auto* h = new QHBoxLayout;
  h->addWidget(table_, 3);
  h->addWidget(compare_, 1);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->addLayout(h);
  v->addLayout(buttons);
  return box;
}

QStringList BenchmarksPanel::sweepArgs() const {
  QStringList a{"--url", url_->text().trimmed(), "--model", model_->text().trimmed(), "--endpoint",
                endpoint_->currentText(), "--concurrency", levels_->text().remove(' '), "--output-len",
                QString::number(outputLen_->value())};
  if (numPrompts_->value() > 0) a << "--num-prompts" << QString::number(numPrompts_->value());
  if (price_->value() > 0) a << "--price-per-hour" << QString::number(price_->value());
  if (!label_->text().trimmed().isEmpty()) a << "--label" << label_->text().trimmed();
  if (session_->isOpen()) a << "--lab" << session_->path();
  return a;
}

bool BenchmarksPanel::run() {
  if (isRunning()) return false;
  if (url_->text().trimmed().isEmpty() || model_->text().trimmed().isEmpty()) {
    setStatus(tr("Enter the endpoint URL and the model."));
    return false;
  }
  live_->clear();
  levelIndex_ = 0;
  timeOffset_ = lastT_ = 0;
  progress_->setValue(0);
  setStatus(session_->isOpen() ? tr("Running…") : tr("Running — no lab is open, so results are not recorded."));
  process_->start(sweepArgs());
  runButton_->setEnabled(false);
  stopButton_->setEnabled(true);
  return true;
}

void BenchmarksPanel::stop() { process_->stop(); }

bool BenchmarksPanel::isRunning() const { return process_->isRunning(); }

void BenchmarksPanel::onLevelStarted(int concurrency, int planned) {
  timeOffset_ = lastT_;  // levels follow each other on one time axis
  ++levelIndex_;
  const int total = static_cast<int>(levels_->text().split(',', Qt::SkipEmptyParts).size());
  levelLabel_->setText(tr("level c=%1 (%2 of %3)").arg(concurrency).arg(levelIndex_).arg(total));
  progress_->setRange(0, std::max(planned, 1));
  progress_->setValue(0);
}

void BenchmarksPanel::onFinished(int exitCode, const QString& error, bool stopped) {
  runButton_->setEnabled(true);
  stopButton_->setEnabled(false);
  levelLabel_->setText(tr("idle"));
  if (stopped)
    setStatus(tr("Stopped; finished levels are kept."));
  else if (exitCode != 0)
    setStatus(tr("Sweep failed: %1").arg(error));
  else
    setStatus(tr("Sweep done. %1").arg(status_->text()));
  reload();
  emit sweepFinished(exitCode);
}

void BenchmarksPanel::reload() {
  std::vector<bench::StoredBenchmark> rows;
  if (session_->isOpen() && session_->store()) rows = bench::BenchStore(*session_->store()).list();
  results_->setBenchmarks(std::move(rows));
}

void BenchmarksPanel::updateComparison() {
  auto* chart = compare_->chart();
  bars_->clear();
  for (auto* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  QStringList categories;
  for (int c : results_->levels()) categories << QString("c=%1").arg(c);
  double top = 1;
  for (const auto& index : table_->selectionModel()->selectedRows()) {
    auto* set = new QBarSet(results_->data(results_->index(index.row(), 0)).toString());
    for (int c : results_->levels()) {
      const double v = std::max(0.0, results_->throughputAt(index.row(), c));
      *set << v;
      top = std::max(top, v);
    }
    bars_->append(set);
  }
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.1);
  y->setTitleText(tr("output tok/s"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  bars_->attachAxis(x);
  bars_->attachAxis(y);
}

int BenchmarksPanel::comparedSets() const { return static_cast<int>(bars_->count()); }

QString BenchmarksPanel::status() const { return status_->text(); }

void BenchmarksPanel::setStatus(const QString& text) { status_->setText(text); }

bool BenchmarksPanel::exportCsv(const QString& path, QString* error) const {
  return saveAtomically(path, results_->toCsv().toUtf8(), error);
}

bool BenchmarksPanel::exportJson(const QString& path, QString* error) const {
  return saveAtomically(path, QJsonDocument(results_->toJson()).toJson(), error);
}

void BenchmarksPanel::exportWithDialog(bool json) {
  const QString path = QFileDialog::getSaveFileName(this, json ? tr("Export JSON") : tr("Export CSV"),
                                                    json ? "benchmarks.json" : "benchmarks.csv");
  if (path.isEmpty()) return;
  QString error;
  const bool ok = json ? exportJson(path, &error) : exportCsv(path, &error);
  setStatus(ok ? tr("Exported %1").arg(path) : tr("Export failed: %1").arg(error));
}

}  // namespace crosslab::widgets
