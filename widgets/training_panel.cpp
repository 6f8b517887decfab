#include "widgets/training_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <spdlog/spdlog.h>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "widgets/runs_model.h"

namespace crosslab::widgets {

TrainingPanel::TrainingPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), model_(new RunsModel(session, this)) {
  setObjectName("panel_training");
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::EditRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);  // any column: name, model, venue, status

  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText(tr("Filter runs (name, model, venue, status)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  auto* newRun = new QPushButton(tr("New Run…"), this);
  newRun->setObjectName("newRunButton");
  connect(newRun, &QPushButton::clicked, this, &TrainingPanel::onNewRun);
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("stopButton");
  stop_->setEnabled(false);
  connect(stop_, &QPushButton::clicked, this, &TrainingPanel::onStop);

  table_ = new QTableView(this);
  table_->setObjectName("runsTable");
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // the store's order (newest first) until the user sorts
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  table_->setToolTip(tr("Select several runs to compare their curves."));
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &TrainingPanel::onSelectionChanged);

  chart_ = new LossChart(this);
  smoothing_ = new QSlider(Qt::Horizontal, this);
  smoothing_->setObjectName("smoothing");
  smoothing_->setRange(0, 99);
  smoothing_->setValue(int(chart_->smoothing() * 100));
  connect(smoothing_, &QSlider::valueChanged, this, [this](int v) { chart_->setSmoothing(v / 100.0); });
  logScale_ = new QCheckBox(tr("Log scale"), this);
  connect(logScale_, &QCheckBox::toggled, chart_, &LossChart::setLogScale);
  align_ = new QComboBox(this);
  align_->addItems({tr("by step"), tr("by epoch")});
  connect(align_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { chart_->setAlign(i == 0 ? LossChart::Align::Step : LossChart::Align::Epoch); });

  status_ = new QLabel(this);
  status_->setObjectName("runStatus");
  status_->setWordWrap(true);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("runProgress");
  output_ = new QPlainTextEdit(this);
  output_->setObjectName("runOutput");
  output_->setReadOnly(true);
  output_->setMaximumBlockCount(2000);
  output_->setPlaceholderText(tr("Output of runs started from this window."));

  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 1);
  top->addWidget(newRun);
  top->addWidget(stop_);
  auto* chartControls = new QHBoxLayout;
  chartControls->addWidget(new QLabel(tr("Smoothing"), this));
  chartControls->addWidget(smoothing_, 1);
  chartControls->addWidget(logScale_);
  chartControls->addWidget(align_);
  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->addWidget(chart_, 1);
  rl->addLayout(chartControls);
  rl->addWidget(status_);
  rl->addWidget(progress_);
  rl->addWidget(output_);
  output_->setMaximumHeight(120);
  auto* split = new QSplitter(this);
  split->addWidget(table_);
  split->addWidget(right);
  split->setStretchFactor(1, 2);
  split->setSizes({480, 620});
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);

  poll_.setInterval(kPollMs);
  connect(&poll_, &QTimer::timeout, this, &TrainingPanel::poll);
  poll_.start();
  connect(session_, &backends::LabSession::labChanged, this, [this] {
    chart_->clearRuns();
    lastStep_.clear();
    autoSelected_ = false;
    updateStatus();
  });
  updateStatus();
  QTimer::singleShot(0, this, &TrainingPanel::poll);
}

TrainingPanel::~TrainingPanel() {
  if (child_ && child_->state() != QProcess::NotRunning) {
    child_->terminate();
    child_->waitForFinished(3000);
  }
}

QList<qint64> TrainingPanel::selectedRuns() const {
  QList<qint64> ids;
  for (const auto& idx : table_->selectionModel()->selectedRows())
    ids << idx.data(RunsModel::RunIdRole).toLongLong();
  return ids;
}

void TrainingPanel::selectRun(qint64 runId) {
  const int row = model_->rowOfRun(runId);
  if (row < 0) return;
  table_->selectRow(proxy_->mapFromSource(model_->index(row, 0)).row());
}

void TrainingPanel::poll() {
  if (!session_->isOpen()) return;
  model_->refresh();
  if (!autoSelected_ && model_->rowCount() > 0 && selectedRuns().isEmpty()) {
    autoSelected_ = true;
    table_->resizeColumnsToContents();
    table_->selectRow(0);  // show the newest run's curve rather than an empty chart
    return;                // selecting polled already
  }
  for (qint64 id : chart_->runs()) {
    std::vector<store::MetricRow> rows;
    try {
      rows = session_->store()->metricsAfter(id, lastStep_.value(id, -1));
    } catch (const std::exception& e) {
      spdlog::warn("metrics of run {}: {}", id, e.what());
      continue;
    }
    if (rows.empty()) continue;
    QVector<MetricPoint> points;
    points.reserve(int(rows.size()));
    for (const auto& r : rows) points.append({r.step, r.epoch.value_or(0), r.loss, r.lr, r.evalLoss});
    lastStep_[id] = rows.back().step;
    chart_->append(id, points);
  }
  updateStatus();
}

void TrainingPanel::onSelectionChanged() {
  chart_->clearRuns();
  lastStep_.clear();
  for (qint64 id : selectedRuns()) {
    const auto* r = model_->run(model_->rowOfRun(id));
    chart_->addRun(id, r ? QString::fromStdString(r->name) : QString::number(id));
    if (r && (r->status == "failed" || r->status == "stalled")) chart_->setRunColor(id, RunsModel::statusColor("failed"));
  }
  poll();
}

QString TrainingPanel::statusText() const { return status_->text(); }

void TrainingPanel::updateStatus() {
  const auto ids = selectedRuns();
  const auto* r = ids.isEmpty() ? nullptr : model_->run(model_->rowOfRun(ids.front()));
  if (!r) {
    status_->setText(model_->rowCount() == 0
                         ? tr("No training runs in this lab yet. Start one with New Run, or run "
                              "<code>crosslab-cli train --model DIR --data FILE --out RUN_DIR --lab LAB</code>; "
                              "runs appear here live.")
                         : tr("Select a run to see its curves; select several to compare them."));
    status_->setStyleSheet({});
    progress_->setVisible(false);
    return;
  }
  const qint64 step = r->lastStep.value_or(0), total = r->totalSteps.value_or(0);
  const qint64 elapsed = RunsModel::durationSeconds(*r);
  QString text = tr("<b>%1</b> — %2, step %3 of %4, elapsed %5")
                     .arg(QString::fromStdString(r->name).toHtmlEscaped(), QString::fromStdString(r->status))
                     .arg(step)
                     .arg(total ? QString::number(total) : "?")
                     .arg(RunsModel::formatDuration(elapsed));
  if (r->status == "running" && step > 0 && total > step && elapsed > 0)
    text += tr(", remaining ~%1").arg(RunsModel::formatDuration(elapsed * (total - step) / step));
  if (!r->statusReason.empty()) text += "<br>" + QString::fromStdString(r->statusReason).toHtmlEscaped();
  status_->setText(text);
  const QColor c = RunsModel::statusColor(QString::fromStdString(r->status));
  status_->setStyleSheet(r->status == "failed" || r->status == "stalled" ? QString("color: %1;").arg(c.name()) : QString());
  progress_->setVisible(true);
  progress_->setRange(0, int(std::max<qint64>(total, 1)));
  progress_->setValue(int(std::min(step, std::max<qint64>(total, 1))));
}

void TrainingPanel::onNewRun() {
  if (!session_->isOpen()) return;
  NewRunDialog dialog(session_->path(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  startTraining(dialog.cliArguments());
}

bool TrainingPanel::startTraining(const QStringList& args) {
  if (child_ && child_->state() != QProcess::NotRunning) {
    output_->appendPlainText(tr("A run started here is still going; stop it first."));
    return false;
  }
  child_ = new QProcess(this);
  child_->setProcessChannelMode(QProcess::MergedChannels);
  connect(child_, &QProcess::readyRead, this, &TrainingPanel::onChildOutput);
  connect(child_, &QProcess::finished, this, &TrainingPanel::onChildFinished);
  const QString program = backends::cliExecutable();
  output_->appendPlainText("$ " + program + " " + args.join(' '));
  child_->start(program, args);
  if (!child_->waitForStarted(5000)) {
    output_->appendPlainText(tr("could not start %1: %2").arg(program, child_->errorString()));
    child_->deleteLater();
    return false;
  }
  stop_->setEnabled(true);
  spdlog::info("started training: {} {}", program.toStdString(), args.join(' ').toStdString());
  return true;
}

void TrainingPanel::onStop() {
  if (!child_) return;
  output_->appendPlainText(tr("stopping…"));
  child_->terminate();  // SIGTERM: the trainer writes a checkpoint and ends cleanly
  QTimer::singleShot(10000, child_, [c = child_] {
    if (c && c->state() != QProcess::NotRunning) c->kill();
  });
}

void TrainingPanel::onChildOutput() {
  if (!child_) return;
  output_->appendPlainText(QString::fromUtf8(child_->readAll()).trimmed());
}

void TrainingPanel::onChildFinished(int exitCode, QProcess::ExitStatus status) {
  onChildOutput();
  output_->appendPlainText(status == QProcess::CrashExit ? tr("training process crashed")
                                                         : tr("training process exited with code %1").arg(exitCode));
  stop_->setEnabled(false);
  child_->deleteLater();
  poll();
}

}  // namespace crosslab::widgets
