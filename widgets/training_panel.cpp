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
#include <QDateTime>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "core/train/run_process.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "widgets/runs_model.h"
#include "core/ledger/friction_log.h"
#include "widgets/friction_dialog.h"

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
  logFriction_ = new QPushButton(tr("Log friction…"), this);
  logFriction_->setObjectName("logFrictionButton");
  logFriction_->setToolTip(tr("Log the selected failed or stalled run in the friction log, pre-filled"));
  logFriction_->setEnabled(false);
  connect(logFriction_, &QPushButton::clicked, this, &TrainingPanel::onLogFriction);

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
  top->addWidget(logFriction_);
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
    stopRequested_ = true;  // closing the window stops the run like Stop does
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
  markOrphanedRuns();
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

void TrainingPanel::markOrphanedRuns() {
  std::vector<store::RunSummary> runs;
  try {
    runs = session_->store()->runSummaries();
  } catch (const std::exception& e) {
    spdlog::warn("runs list: {}", e.what());
    return;
  }
  const auto now = QDateTime::currentDateTimeUtc();
  for (const auto& r : runs) {
    // Local runs only (remote runs have their own watch), with a folder to judge by, that
    // this window is not already following.
    if ((r.status != "running" && r.status != "pending") || (r.venue != "local" && !r.venue.empty()) ||
        !std::filesystem::path(r.runDir).is_absolute())  // remote runs are BOX:DIR
      continue;
    if (watch_ && watch_->runId() == r.id && !watch_->ended()) continue;
    const auto started = QDateTime::fromString(QString::fromStdString(r.startedAt), Qt::ISODate);
    const double age = started.isValid() ? double(started.secsTo(now)) : orphanStaleSeconds_;
    const std::string reason = train::deadRunReason(r.runDir, age, orphanStaleSeconds_);
    if (reason.empty()) continue;
    try {
      session_->store()->setRunStatus(r.id, "failed", reason);
      session_->store()->addEvent(r.id, std::nullopt, "train.watchdog", reason,
                                  QJsonDocument(QJsonObject{{"state", "failed"}, {"reason", QString::fromStdString(reason)}})
                                      .toJson(QJsonDocument::Compact)
                                      .toStdString());
      spdlog::warn("run {} ({}): {}", r.id, r.name, reason);
    } catch (const std::exception& e) {
      spdlog::warn("run {}: {}", r.id, e.what());
    }
  }
}

void TrainingPanel::onSelectionChanged() {
  chart_->clearRuns();
  lastStep_.clear();
  const auto selected = selectedRuns();
  const auto* first = selected.isEmpty() ? nullptr : model_->run(model_->rowOfRun(selected.front()));
  logFriction_->setEnabled(first && (first->status == "failed" || first->status == "stalled"));
  for (qint64 id : selectedRuns()) {
    const auto* r = model_->run(model_->rowOfRun(id));
    chart_->addRun(id, r ? QString::fromStdString(r->name) : QString::number(id));
    if (r && (r->status == "failed" || r->status == "stalled")) chart_->setRunColor(id, RunsModel::statusColor("failed"));
  }
  poll();
}

QString TrainingPanel::statusText() const { return status_->text(); }

void TrainingPanel::onLogFriction() {
  const auto ids = selectedRuns();
  auto* lab = session_->store();
  if (ids.isEmpty() || !lab) return;
  const auto* r = model_->run(model_->rowOfRun(ids.front()));
  ledger::FrictionLog log(*lab);
  // The watchdog's words when it is the one that judged this run here, else the run's reason.
  const bool watched = watch_ && watch_->runId() == ids.front() && !watch_->reason().isEmpty();
  auto offer = watched ? log.suggestFromWatchdog(ids.front(), watch_->reason().toStdString())
                       : log.suggestFromRun(ids.front());
  if (!offer && r) offer = log.suggestFromWatchdog(ids.front(), r->statusReason);
  if (!offer) return;
  FrictionDialog dialog(*lab, *offer, this);
  if (dialog.exec() == QDialog::Accepted) status_->setText(tr("Logged in the friction log (entry %1).").arg(dialog.savedId()));
}

void TrainingPanel::updateStatus() {
  const auto ids = selectedRuns();
  const auto* r = ids.isEmpty() ? nullptr : model_->run(model_->rowOfRun(ids.front()));
  const bool watchDead = watch_ && (watch_->state() == train::RunState::Failed || watch_->state() == train::RunState::Stalled);
  const QString red = RunsModel::statusColor("failed").name();
  auto watchDetail = [this] {
    QString lines = watch_->lastLines(5).join('\n').toHtmlEscaped();
    return "<br>" + tr("watchdog: %1 — %2").arg(QString::fromLatin1(train::toString(watch_->state())), watch_->reason().toHtmlEscaped()) +
           (lines.isEmpty() ? QString() : "<pre>" + lines + "</pre>");
  };
  if (!r && watchDead && watch_->runId() == 0) {  // a child without a store row
    status_->setText(tr("<b>the run started here</b>") + watchDetail());
    status_->setStyleSheet(QString("color: %1;").arg(red));
    progress_->setVisible(false);
    return;
  }
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
  const bool watched = watchDead && watch_->runId() == r->id;
  if (watched) text += watchDetail();
  status_->setText(text);
  const QColor c = RunsModel::statusColor(QString::fromStdString(r->status));
  status_->setStyleSheet(r->status == "failed" || r->status == "stalled" || watched
                             ? QString("color: %1;").arg(c.isValid() && r->status != "running" ? c.name() : red)
                             : QString());
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
  QString runDir;
  const qint64 runId = registerRun(args, &runDir);
  if (watch_) watch_->deleteLater();
  watch_ = new LocalRunWatch(session_, runId, runDir, watchOptions_, this);
  connect(watch_, &LocalRunWatch::stateChanged, this, &TrainingPanel::onWatchState);
  stopRequested_ = false;
  child_ = new QProcess(this);
  child_->setProcessChannelMode(QProcess::MergedChannels);
  connect(child_, &QProcess::readyRead, this, &TrainingPanel::onChildOutput);
  connect(child_, &QProcess::finished, this, &TrainingPanel::onChildFinished);
  const QString program = backends::cliExecutable();
  output_->appendPlainText("$ " + program + " " + args.join(' '));
  child_->start(program, args);
  if (!child_->waitForStarted(5000)) {
    const QString why = tr("could not start %1: %2").arg(program, child_->errorString());
    output_->appendPlainText(why);
    if (runId) {
      try {
        session_->store()->setRunStatus(runId, "failed", why.toStdString());
      } catch (const std::exception& e) {
        spdlog::warn("run {}: {}", runId, e.what());
      }
    }
    child_->deleteLater();
    watch_->deleteLater();
    poll();
    return false;
  }
  stop_->setEnabled(true);
  if (runId) {
    poll();
    selectRun(runId);
  }
  spdlog::info("started training: {} {}", program.toStdString(), args.join(' ').toStdString());
  return true;
}

qint64 TrainingPanel::childPid() const { return child_ ? child_->processId() : 0; }

qint64 TrainingPanel::registerRun(const QStringList& args, QString* runDir) {
  auto value = [&args](const QString& flag) {
    const int i = args.indexOf(flag);
    return i >= 0 && i + 1 < args.size() ? args[i + 1] : QString();
  };
  const QString out = value("--out"), lab = value("--lab");
  if (out.isEmpty()) return 0;
  // The trainer's own spelling of its run folder (train_commands.cpp): the same row.
  const std::string dir = std::filesystem::absolute(out.toStdString()).lexically_normal().string();
  *runDir = QString::fromStdString(dir);
  if (lab.isEmpty() || !session_->isOpen() ||
      QFileInfo(lab).canonicalFilePath() != QFileInfo(session_->path()).canonicalFilePath())
    return 0;
  try {
    auto* store = session_->store();
    for (const auto& r : store->runSummaries())
      if (r.runDir == dir) {
        store->setRunStatus(r.id, "pending", "starting (resume)");
        return r.id;
      }
    const auto id = store->addRun({std::filesystem::path(dir).filename().string(), "train", "crosslab",
                                   value("--model").toStdString(), std::nullopt, dir, ""});
    store->setRunStatus(id, "pending", "starting");
    return id;
  } catch (const std::exception& e) {
    spdlog::warn("registering run {}: {}", dir, e.what());
    return 0;
  }
}

void TrainingPanel::onWatchState(train::RunState state, const QString& reason) {
  if (state == train::RunState::Failed || state == train::RunState::Stalled)
    output_->appendPlainText(tr("watchdog: run %1: %2").arg(QString::fromLatin1(train::toString(state)), reason));
  poll();
}

void TrainingPanel::onStop() {
  if (!child_) return;
  stopRequested_ = true;
  output_->appendPlainText(tr("stopping…"));
  child_->terminate();  // SIGTERM: the trainer writes a checkpoint and ends cleanly
  QTimer::singleShot(10000, child_, [c = child_] {
    if (c && c->state() != QProcess::NotRunning) c->kill();
  });
}

void TrainingPanel::onChildOutput() {
  if (!child_) return;
  const QByteArray chunk = child_->readAll();
  if (chunk.isEmpty()) return;
  if (watch_) watch_->feedOutput(chunk);
  output_->appendPlainText(QString::fromUtf8(chunk).trimmed());
}

void TrainingPanel::onChildFinished(int exitCode, QProcess::ExitStatus status) {
  onChildOutput();
  output_->appendPlainText(status == QProcess::CrashExit ? tr("training process killed by signal %1").arg(exitCode)
                                                         : tr("training process exited with code %1").arg(exitCode));
  stop_->setEnabled(false);
  if (watch_) watch_->processFinished(exitCode, status, stopRequested_);
  child_->deleteLater();
  poll();
}

}  // namespace crosslab::widgets
