#include "widgets/training_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelection>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "backends/runs/run_launch.h"
#include "core/model/safetensors_writer.h"
#include "core/store/lab_store.h"
#include "core/train/run_process.h"
#include "widgets/loss_chart.h"
#include "widgets/new_run_dialog.h"
#include "widgets/runs_model.h"
#include "core/ledger/friction_log.h"
#include "widgets/friction_dialog.h"

namespace crosslab::widgets {

TrainingPanel::TrainingPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      controller_(new backends::RunController(this)),
      model_(new RunsModel(session, this)) {
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
  auto* reuse = new QPushButton(tr("Reuse Recipe…"), this);
  reuse->setObjectName("reuseRecipeButton");
  reuse->setToolTip(tr("New Run with the selected run's recipe"));
  connect(reuse, &QPushButton::clicked, this, [this] {
    const auto ids = selectedRuns();
    onNewRunFrom(ids.isEmpty() ? 0 : ids.front());
  });
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
  // A run that appears or goes (another process wrote the lab, whoever asked the list to
  // refresh) resets the list: the runs the user selected stay selected, and the chart keeps
  // them without a reload. The selection model clears itself on the reset (it is connected
  // first); the selection is put back before anyone hears of a change.
  connect(model_, &QAbstractItemModel::modelAboutToBeReset, this, [this] {
    keptSelection_ = selectedRuns();
    table_->selectionModel()->blockSignals(true);
  });
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    QItemSelection again;
    for (qint64 id : keptSelection_) {
      const int row = model_->rowOfRun(id);
      if (row < 0) continue;
      const QModelIndex at = proxy_->mapFromSource(model_->index(row, 0));
      again.select(at, at);
    }
    if (!again.isEmpty())
      table_->selectionModel()->select(again, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->selectionModel()->blockSignals(false);
    table_->viewport()->update();
    auto now = selectedRuns(), before = keptSelection_;
    std::sort(now.begin(), now.end());
    std::sort(before.begin(), before.end());
    if (now != before) onSelectionChanged();  // a selected run left the lab
  });

  chart_ = new LossChart(this);
  smoothing_ = new QSlider(Qt::Horizontal, this);
  smoothing_->setObjectName("smoothing");
  smoothing_->setRange(0, 99);
  smoothing_->setValue(int(chart_->smoothing() * 100));
  connect(smoothing_, &QSlider::valueChanged, this, [this](int v) { chart_->setSmoothing(v / 100.0); });
  logScale_ = new QCheckBox(tr("Log scale"), this);
  logScale_->setObjectName("logScale");
  connect(logScale_, &QCheckBox::toggled, chart_, &LossChart::setLogScale);
  align_ = new QComboBox(this);
  align_->setObjectName("align");
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
  output_->setPlaceholderText(tr("Output of the runs this window follows."));

  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 1);
  top->addWidget(newRun);
  top->addWidget(reuse);
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
  soon_.setSingleShot(true);
  soon_.setInterval(100);
  connect(&soon_, &QTimer::timeout, this, &TrainingPanel::poll);
  connect(controller_, &backends::RunController::runChanged, this, &TrainingPanel::onRunChanged);
  connect(controller_, &backends::RunController::message, this, &TrainingPanel::onMessage);
  connect(session_, &backends::LabSession::labChanged, this, [this] {
    chart_->clearRuns();
    lastSeq_.clear();
    autoSelected_ = false;
    output_->clear();
    // Follow this lab's runs; the previous lab's go on training by themselves.
    controller_->setLab(session_->isOpen() ? session_->path() : QString());
    updateStatus();
  });
  if (session_->isOpen()) controller_->setLab(session_->path());
  session_->addCloseGuard(this, [this](backends::LabSession::CloseReason reason) {
    return closeConcern(reason == backends::LabSession::CloseReason::Quit);
  });
  updateStatus();
  QTimer::singleShot(0, this, &TrainingPanel::poll);
}

QString TrainingPanel::closeConcern(bool quitting) const {
  if (!session_->isOpen()) return {};
  std::vector<store::RunSummary> runs;
  try {
    runs = session_->store()->runs().list();
  } catch (const std::exception& e) {
    spdlog::warn("runs list: {}", e.what());
    return {};
  }
  QStringList lines;
  for (const auto& r : runs) {
    const auto follow = controller_->info(r.id);
    if (!follow.following || !train::isActive(r.state)) continue;
    const QString name = QString::fromStdString(r.name);
    const QString where = r.remote() ? tr("on %1").arg(QString::fromStdString(r.runDir.substr(0, r.runDir.find(':'))))
                                     : tr("on this machine");
    const QString& phase = follow.phase;
    if (phase == "starting" || phase == "launching" || phase.startsWith("connecting") || phase.startsWith("pushing")) {
      // Switching labs lets the start finish (the worker finishes it first); quitting ends
      // the worker, and a push of weights gives up.
      lines << (quitting ? tr("'%1' is still being started %2 (%3): quitting abandons the start")
                         : tr("'%1' is still being started %2 (%3): it starts and trains while the lab is closed"))
                   .arg(name, where, phase);
      continue;
    }
    QString line = tr("'%1' keeps training %2").arg(name, where);
    if (follow.pricePerHour > 0) line += tr(" (the box bills $%1/h)").arg(follow.pricePerHour, 0, 'f', 2);
    lines << line + tr(": closing never stops a run (open the lab again to follow it; Stop ends it)");
  }
  return lines.join("\n• ");
}

// Runs are detached processes: the window going away lets go of them, never stops them.
TrainingPanel::~TrainingPanel() = default;

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
      rows = session_->store()->runs().metricsSince(id, lastSeq_.value(id, -1));
    } catch (const std::exception& e) {
      spdlog::warn("metrics of run {}: {}", id, e.what());
      continue;
    }
    if (rows.empty()) continue;
    QVector<MetricPoint> points;
    points.reserve(int(rows.size()));
    qint64 seq = lastSeq_.value(id, -1);
    for (const auto& r : rows) {
      points.append({r.step, r.epoch.value_or(0), r.loss, r.lr, r.evalLoss});
      seq = std::max<qint64>(seq, r.seq);
    }
    lastSeq_[id] = seq;
    chart_->append(id, points);
  }
  updateStatus();
}

void TrainingPanel::markOrphanedRuns() {
  std::vector<store::RunSummary> runs;
  try {
    runs = session_->store()->runs().list();
  } catch (const std::exception& e) {
    spdlog::warn("runs list: {}", e.what());
    return;
  }
  const auto now = QDateTime::currentDateTimeUtc();
  for (const auto& r : runs) {
    // Runs with a launch record are the controller's; runs on a box are judged there. The
    // rest — a shell's `crosslab-cli train --lab` — by the trainer's process record.
    if ((r.state != train::RunStatus::Running && r.state != train::RunStatus::Stalled) || !r.launchJson.empty() || r.remote() ||
        !std::filesystem::path(r.runDir).is_absolute())
      continue;
    const auto started = QDateTime::fromString(QString::fromStdString(r.startedAt), Qt::ISODate);
    const double age = started.isValid() ? double(started.secsTo(now)) : orphanStaleSeconds_;
    const std::string reason = train::deadRunReason(r.runDir, age, orphanStaleSeconds_);
    if (reason.empty()) continue;
    try {
      if (session_->store()->runs().requestStatus(r.id, train::RunStatus::Failed, reason)) {
        session_->store()->addEvent(r.id, std::nullopt, "train.watchdog", reason,
                                    QJsonDocument(QJsonObject{{"state", "failed"}, {"reason", QString::fromStdString(reason)}})
                                        .toJson(QJsonDocument::Compact)
                                        .toStdString());
        spdlog::warn("run {} ({}): {}", r.id, r.name, reason);
      }
    } catch (const std::exception& e) {
      spdlog::warn("run {}: {}", r.id, e.what());
    }
  }
}

void TrainingPanel::onSelectionChanged() {
  chart_->clearRuns();
  lastSeq_.clear();
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
  const auto follow = controller_->info(ids.front());
  const bool watched = !follow.reason.isEmpty() &&
                       (follow.status == train::RunStatus::Stalled || follow.status == train::RunStatus::Failed);
  auto offer = watched ? log.suggestFromWatchdog(ids.front(), follow.reason.toStdString())
                       : log.suggestFromRun(ids.front());
  if (!offer && r) offer = log.suggestFromWatchdog(ids.front(), r->statusReason);
  if (!offer) return;
  FrictionDialog dialog(*lab, *offer, this);
  if (dialog.exec() == QDialog::Accepted) status_->setText(tr("Logged in the friction log (entry %1).").arg(dialog.savedId()));
}

void TrainingPanel::updateStatus() {
  const auto ids = selectedRuns();
  const auto* r = ids.isEmpty() ? nullptr : model_->run(model_->rowOfRun(ids.front()));
  const QString red = RunsModel::statusColor("failed").name();
  if (!r) {
    status_->setText(model_->rowCount() == 0
                         ? tr("No training runs in this lab yet. Start one with New Run, or run "
                              "<code>crosslab-cli train --model DIR --data FILE --out RUN_DIR --lab LAB</code>; "
                              "runs appear here live.")
                         : tr("Select a run to see its curves; select several to compare them."));
    status_->setStyleSheet({});
    progress_->setVisible(false);
    stop_->setEnabled(false);
    return;
  }
  const auto follow = controller_->info(r->id);
  const qint64 step = r->lastStep.value_or(0), total = r->totalSteps.value_or(0);
  const qint64 elapsed = RunsModel::durationSeconds(*r);
  QString text = tr("<b>%1</b> — %2, step %3 of %4, elapsed %5")
                     .arg(QString::fromStdString(r->name).toHtmlEscaped(), QString::fromStdString(r->status))
                     .arg(step)
                     .arg(total ? QString::number(total) : "?")
                     .arg(RunsModel::formatDuration(elapsed));
  if (r->status == "running" && step > 0 && total > step && elapsed > 0)
    text += tr(", remaining ~%1").arg(RunsModel::formatDuration(elapsed * (total - step) / step));
  if (r->remote()) text += tr(" — on %1").arg(QString::fromStdString(r->runDir.substr(0, r->runDir.find(':'))).toHtmlEscaped());
  if (!r->statusReason.empty()) text += "<br>" + QString::fromStdString(r->statusReason).toHtmlEscaped();
  const bool watchDead = follow.following && (follow.status == train::RunStatus::Stalled || follow.status == train::RunStatus::Failed);
  if (follow.following && !follow.phase.isEmpty() && follow.phase != "following")
    text += "<br>" + follow.phase.toHtmlEscaped();
  if (watchDead) {
    text += "<br>" + tr("watchdog: %1 — %2").arg(QString::fromLatin1(train::toString(follow.status)), follow.reason.toHtmlEscaped());
    if (follow.pricePerHour > 0)
      text += "<br>" + tr("no progress for %1 — $%2 so far at $%3/h")
                           .arg(RunsModel::formatDuration(qint64(follow.secondsSinceProgress)))
                           .arg(follow.costWhileDead, 0, 'f', 2)
                           .arg(follow.pricePerHour, 0, 'f', 2);
    if (!follow.lastLines.isEmpty()) text += "<pre>" + follow.lastLines.join('\n').toHtmlEscaped() + "</pre>";
  }
  status_->setText(text);
  const QColor c = RunsModel::statusColor(QString::fromStdString(r->status));
  status_->setStyleSheet(r->status == "failed" || r->status == "stalled" || watchDead
                             ? QString("color: %1;").arg(c.isValid() && r->status != "running" ? c.name() : red)
                             : QString());
  progress_->setVisible(true);
  progress_->setRange(0, int(std::max<qint64>(total, 1)));
  progress_->setValue(int(std::min(step, std::max<qint64>(total, 1))));
  stop_->setEnabled(follow.following && train::isActive(r->state));
  stop_->setToolTip(follow.following ? tr("Stop cleanly: SIGTERM, the trainer writes a checkpoint (resume later)")
                                     : tr("Only runs this window follows can be stopped here"));
}

void TrainingPanel::onNewRun() { onNewRunFrom(0); }

void TrainingPanel::onNewRunFrom(qint64 runId) {
  if (!session_->isOpen()) return;
  NewRunDialog dialog(session_, this);
  if (runId) dialog.startFrom(runId);
  if (dialog.exec() != QDialog::Accepted) return;
  QString error;
  if (!startRun(dialog.choice(), &error))
    QMessageBox::warning(this, tr("New Run"), tr("The run was not started: %1").arg(error));
}

qint64 TrainingPanel::startRun(const NewRunChoice& c, QString* error) {
  namespace fs = std::filesystem;
  if (!session_->isOpen()) return 0;
  const QString runDir = QDir(session_->path()).filePath("runs/" + c.name);
  backends::RunLaunch l;
  l.localDir = store::normalRunDir(runDir.toStdString());
  l.dataFile = c.dataPath.toStdString();
  const std::string modelName = fs::path(c.recipe.modelPath).filename().string();
  store::NewRun nr;
  nr.name = c.name.toStdString();
  nr.model = modelName;
  if (c.box) {
    l.where = "box";
    l.engine = c.engine.toStdString();
    l.box = c.box->name;
    l.boxId = c.box->id;
    l.pricePerHour = c.box->pricePerHour.value_or(0);
    l.workDir = c.boxFolder.toStdString() + "/runs/" + nr.name;
    l.modelOnHost = c.boxFolder.toStdString() + "/models/" + modelName;
    l.outputDir = "output";
    l.eventsFile = l.engine == "llamafactory" ? "output/trainer_log.jsonl" : "output/events.jsonl";
    nr.runDir = c.box->name + ":" + l.workDir;
    nr.boxId = c.box->id;
    nr.venueId = c.box->venueId;
  } else {
    l.workDir = l.localDir;
    l.eventsFile = "events.jsonl";
    nr.runDir = l.localDir;
  }
  nr.engine = l.engine;
  nr.recipeJson = train::recipeToJson(c.recipe);
  nr.launchJson = l.toJson();
  // The run's folder is new or the run is refused: never written into another run.
  std::error_code ec;
  if (fs::exists(l.localDir, ec)) {
    if (error) *error = tr("runs/%1 already exists in the lab").arg(c.name);
    return 0;
  }
  qint64 id = 0;
  try {
    id = session_->store()->runs().requestCreate(nr);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return 0;
  }
  const QString recipeFile = QDir(runDir).filePath("recipe.json");
  try {
    fs::create_directories(l.localDir);
    model::writeFileAtomically(recipeFile.toStdString(), nr.recipeJson);
  } catch (const std::exception& e) {
    session_->store()->runs().requestStatus(id, train::RunStatus::Failed, std::string("cannot write the run folder: ") + e.what());
    if (error) *error = QString::fromStdString(e.what());
    poll();
    return 0;
  }
  // The lab remembers this choice for the next New Run.
  try {
    QJsonObject last{{"recipe", QJsonDocument::fromJson(QByteArray::fromStdString(nr.recipeJson)).object()},
                     {"where", c.box ? QString::fromStdString(c.box->name) : QString()},
                     {"engine", c.engine},
                     {"box_folder", c.boxFolder},
                     {"data", c.dataPath}};
    session_->store()->runs().requestLastChoice(QJsonDocument(last).toJson(QJsonDocument::Compact).toStdString());
  } catch (const std::exception& e) {
    spdlog::warn("last choice: {}", e.what());
  }
  backends::StartRequest req;
  req.runId = id;
  req.launch = l;
  req.recipeFile = recipeFile;
  req.modelDir = QString::fromStdString(c.recipe.modelPath);
  req.program = c.box ? QString::fromStdString(c.recipe.launcher) : backends::cliExecutable();
  output_->appendPlainText(tr("starting %1 %2").arg(c.name, c.box ? tr("on %1").arg(QString::fromStdString(c.box->name)) : tr("on this machine")));
  controller_->start(req);
  poll();
  selectRun(id);
  spdlog::info("run {} ({}) started {}", id, nr.name, c.box ? "on " + c.box->name : "here");
  return id;
}

void TrainingPanel::onStop() {
  const auto ids = selectedRuns();
  if (ids.isEmpty() || !controller_->following(ids.front())) return;
  output_->appendPlainText(tr("stopping… (SIGTERM: the trainer writes a checkpoint)"));
  stop_->setEnabled(false);
  controller_->stop(ids.front());
}

void TrainingPanel::onRunChanged(qint64) {
  if (!soon_.isActive()) soon_.start();
}

void TrainingPanel::onMessage(qint64 runId, const QString& line) {
  const auto ids = selectedRuns();
  if (!ids.isEmpty() && ids.front() != runId) return;  // the selected run's lines only
  output_->appendPlainText(line);
}

}  // namespace crosslab::widgets
