#include "widgets/benchmarks_panel.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "backends/bench/bench_process.h"
#include "backends/bench/server_metrics_poller.h"
#include "backends/lab_session.h"
#include "backends/serve/local_serve_process.h"
#include "core/venues/serve_command.h"
#include "widgets/box_server_form.h"
#include "core/bench/bench_store.h"
#include "widgets/bench_live_chart.h"
#include "widgets/bench_results_model.h"
#include "widgets/file_dialogs.h"

namespace crosslab::widgets {

BenchmarksPanel::BenchmarksPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      process_(new backends::BenchProcess(this)),
      server_(new backends::LocalServeProcess(this)),
      metrics_(new backends::ServerMetricsPoller(this)) {
  setObjectName("panel_benchmarks");
  // Inside a scroll area, so that the panel never forces the window's minimum size.
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* content = new QWidget(scroll);
  // Only the width is pinned: the height is the layout's own minimum, so that a small window
  // scrolls instead of squeezing the form (the local-server block once shrank to 18 px).
  content->setMinimumWidth(760);
  auto* splitter = new QSplitter(Qt::Vertical, content);
  // Top: the form on the left, the live chart beside it; bottom: the lab's table.
  auto* top = new QWidget(splitter);
  auto* topLayout = new QHBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  auto* form = buildForm();
  form->setMaximumWidth(440);
  topLayout->addWidget(form);
  // Beside it, the charts: the running sweep's, and the comparison of the rows selected in the
  // table (shown when the lab opens with sweeps recorded, and when the user selects rows).
  charts_ = new QTabWidget(top);
  charts_->setObjectName("chartTabs");
  live_ = new BenchLiveChart(charts_);
  charts_->addTab(live_, tr("Live sweep"));
  charts_->addTab(buildComparison(charts_), tr("Compare rows"));
  topLayout->addWidget(charts_, 1);
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
    clientOutputTokens_ += r.value("total_output_tokens").toInteger();
    const QString collapse = r.value("collapse").toString();
    if (r.value("completed").toInt() > 0)  // the level's figure, on the chart as in the table
      live_->addLevel(timeOffset_ + r.value("duration").toDouble(), r.value("output_throughput").toDouble());
    const QJsonValue perStream = r.value("per_stream_tok_s");  // null: every reply came in one read
    setStatus(tr("c=%1: %2 tok/s aggregate, %3, %4 failed%5")
                  .arg(r.value("max_concurrency").toInt())
                  .arg(r.value("output_throughput").toDouble(), 0, 'f', 1)
                  .arg(perStream.isDouble() ? tr("%1 tok/s per stream").arg(perStream.toDouble(), 0, 'f', 1)
                                            : tr("per stream not measured"))
                  .arg(r.value("failed").toInt())
                  .arg(collapse.isEmpty() ? QString() : tr(" — %1").arg(collapse)));
    reload();
  });
  connect(process_, &backends::BenchProcess::finished, this, &BenchmarksPanel::onFinished);
  connect(metrics_, &backends::ServerMetricsPoller::firstRead, this, [this](bool ok, const QString& why) {
    if (!ok)
      serverLabel_->setText(tr("Server: its /metrics could not be read (%1); only the client's figures.").arg(why));
    else
      serverLabel_->setText(tr("Server: counters read; the sweep starts."));
    if (!metricsPending_) return;
    metricsPending_ = false;
    launchBench();
  });
  connect(metrics_, &backends::ServerMetricsPoller::liveReading, this, [this](const bench::ServerReading& r) {
    serverLabel_->setText(tr("Server now: %1").arg(QString::fromStdString(bench::describeLive(r))));
  });
  connect(metrics_, &backends::ServerMetricsPoller::sweepRead, this,
          [this](bool ok, const bench::ServerReading& r, const QString& why) {
            // The poller's first read came before the warm-up: the server's count includes it.
            const QString warm =
                sweepWarmup_ == 0 ? QString()
                : sweepWarmup_ == 1
                    ? tr(" (the server's count includes the warm-up request; the client's does not)")
                    : tr(" (the server's count includes the %1 warm-up requests; the client's does not)").arg(sweepWarmup_);
            serverLabel_->setText(ok ? tr("Server, over the sweep: %1%2")
                                           .arg(QString::fromStdString(bench::describeSweep(r, clientOutputTokens_)), warm)
                                     : tr("Server: its counters after the sweep could not be read (%1).").arg(why));
          });
  connect(server_, &backends::LocalServeProcess::logLine, this,
          [](const QString& line) { spdlog::info("serve: {}", line.toStdString()); });
  connect(server_, &backends::LocalServeProcess::ready, this, &BenchmarksPanel::onServerReady);
  connect(server_, &backends::LocalServeProcess::failed, this, &BenchmarksPanel::onServerFailed);
  connect(server_, &backends::LocalServeProcess::stopped, this, [this] {
    spdlog::info("local server stopped");
    if (!restartArgs_.isEmpty()) {  // Run with other settings: the old server is gone, start the new one
      const QStringList args = restartArgs_;
      restartArgs_.clear();
      server_->start(args);
    }
    updateEndpointUi();
  });
  auto* boxServer = boxForm_->server();
  connect(boxServer, &remote::RemoteServer::ready, this, [this](const QString& url) {
    updateEndpointUi();
    if (!sweepPending_ || !boxEndpoint()) return;
    sweepPending_ = false;
    setStatus(tr("The server on %1 answers at %2 (tunnel).").arg(QString::fromStdString(boxForm_->server()->spec().box.name), url));
    startSweep();
  });
  connect(boxServer, &remote::RemoteServer::failed, this, [this](const QString& error) { onServerFailed(error); });
  connect(boxServer, &remote::RemoteServer::stopped, this, [this] {
    setStatus(tr("The server on the box stopped."));
    updateEndpointUi();
  });
  connect(session_, &backends::LabSession::labChanged, this, [this] {
    labOpened_ = true;  // first: this lab's benchmarks are not the ones selected or seen before
    stopServer();  // a server of the previous lab's models has no business running on
    boxForm_->reload();
    // A model id picked from the previous lab's adapters names nothing in this one.
    QStringList oldAdapters;
    for (int i = 0; i < adapters_->count(); ++i) oldAdapters << adapters_->item(i)->text();
    const QString typed = model_->text().trimmed();
    if (!typed.isEmpty() && (typed == autoModel_ || oldAdapters.contains(typed))) model_->clear();
    autoModel_.clear();
    fillLocalDefaults();
    reload();
    resetProgress(tr("idle"));
  });
  connect(session_, &backends::LabSession::labDataChanged, this, &BenchmarksPanel::reload);
  // The window's close question names what closing the lab stops here (servers go with the
  // lab; a sweep goes with the window, or with the server it measures).
  session_->addCloseGuard(this, [this](backends::LabSession::CloseReason reason) {
    const bool switching = reason == backends::LabSession::CloseReason::SwitchLab;
    const bool onBox = boxForm_->server()->state() != remote::RemoteServer::State::Idle, local = server_->isRunning();
    QStringList concerns;
    if (process_->isRunning() && (!switching || (sweepOnLocal_ && local) || (sweepOnBox_ && onBox)))
      concerns << tr("the benchmark sweep stops (the levels it finished are kept)");
    if (local) concerns << tr("the local server stops");
    if (onBox) concerns << tr("the server on %1 stops").arg(QString::fromStdString(boxForm_->server()->spec().box.name));
    return concerns.join("\n• ");
  });
  fillLocalDefaults();
  updateEndpointUi();
  reload();
}

BenchmarksPanel::~BenchmarksPanel() {
  // The window is closing: no more signals into this half-destroyed panel; the local
  // server's destructor ends the child (SIGTERM, then SIGKILL) and waits for it.
  server_->disconnect(this);
  process_->disconnect(this);
  boxForm_->server()->disconnect(this);  // its destructor stops the server on the box
  delete server_;
}

QWidget* BenchmarksPanel::buildForm() {
  auto* box = new QWidget(this);
  auto* form = new QFormLayout;
  endpointKind_ = new QComboBox(box);
  endpointKind_->setObjectName("endpointKind");
  endpointKind_->addItems({tr("URL"), tr("Local server (crosslab-cli serve)"), tr("Server on a box")});
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
  warmup_ = new QSpinBox(box);
  warmup_->setObjectName("warmup");
  warmup_->setRange(0, 100000);
  warmup_->setSpecialValueText(tr("none"));
  warmup_->setToolTip(tr("Requests sent before the first level, at once up to the widest level, and not measured "
                         "(bench --warmup, vLLM's --num-warmups): a fresh server's first requests and the first "
                         "writes of its KV rows are then in none of the levels"));
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
  form->addRow(tr("Endpoint"), endpointKind_);
  localBox_ = buildLocalServerBox(box);
  form->addRow(localBox_);
  boxForm_ = new BoxServerForm(session_, box);
  form->addRow(boxForm_);
  form->addRow(tr("Endpoint URL"), url_);
  form->addRow(tr("Model"), model_);
  form->addRow(tr("API"), endpoint_);
  form->addRow(tr("Concurrency levels"), levels_);
  form->addRow(tr("Requests per level"), numPrompts_);
  form->addRow(tr("Warm-up requests"), warmup_);
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
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setTextVisible(false);
  levelLabel_ = new QLabel(tr("idle"), box);
  levelLabel_->setObjectName("levelLabel");
  status_ = new QLabel(box);
  status_->setObjectName("statusLabel");
  status_->setWordWrap(true);
  serverLabel_ = new QLabel(box);
  serverLabel_->setObjectName("serverLabel");
  serverLabel_->setWordWrap(true);
  serverLabel_->setToolTip(tr("What the server itself counted, from its Prometheus /metrics (vLLM's metric names; "
                              "crosslab-cli serve adds its decode steps' batch and cost): read before the sweep's "
                              "first request, every second while it runs, and after it ends."));
  connect(endpointKind_, &QComboBox::currentIndexChanged, this, &BenchmarksPanel::updateEndpointUi);
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
  v->addWidget(serverLabel_);
  v->addStretch(1);
  return box;
}

QWidget* BenchmarksPanel::buildLocalServerBox(QWidget* parent) {
  auto* box = new QWidget(parent);
  box->setObjectName("localServerBox");
  auto* form = new QFormLayout(box);
  form->setContentsMargins(12, 0, 0, 0);
  serveModelDir_ = new QLineEdit(box);
  serveModelDir_->setObjectName("serveModelDir");
  serveModelDir_->setPlaceholderText(tr("Hugging Face checkpoint folder"));
  auto* browse = new QToolButton(box);
  browse->setText(tr("…"));
  browse->setToolTip(tr("Pick the model folder"));
  connect(browse, &QToolButton::clicked, this, [this] {
    const QString dir = FileDialog::existingFolder(this, tr("Model folder"), serveModelDir_->text());
    if (!dir.isEmpty()) serveModelDir_->setText(dir);
  });
  auto* dirRow = new QHBoxLayout;
  dirRow->addWidget(serveModelDir_, 1);
  dirRow->addWidget(browse);
  adapters_ = new QListWidget(box);
  adapters_->setObjectName("serveAdapters");
  adapters_->setMaximumHeight(80);
  adapters_->setToolTip(tr("Adapters from the lab's runs: each checked one is served as NAME=DIR; with one "
                           "checked, the sweep benchmarks that adapter"));
  connect(adapters_, &QListWidget::itemChanged, this, &BenchmarksPanel::followCheckedAdapter);
  loraMode_ = new QComboBox(box);
  loraMode_->setObjectName("serveLoraMode");
  loraMode_->addItems({tr("runtime LoRA (--lora, per request)"), tr("merged into the weights (--merge)")});
  dtype_ = new QComboBox(box);
  dtype_->setObjectName("serveDtype");
  dtype_->addItems({"f32", "bf16"});
  maxBatch_ = new QSpinBox(box);
  maxBatch_->setObjectName("serveMaxBatch");
  maxBatch_->setRange(1, 1024);
  maxBatch_->setValue(32);
  // crosslab-cli serve --stream-interval: on a CPU-bound machine the server and the benchmark
  // client share the cores with the decode step, and HTTP's throughput follows the tokens each
  // write carries (README, twenty-second session). 1 streams every token, as vLLM does.
  streamInterval_ = new QSpinBox(box);
  streamInterval_->setObjectName("serveStreamInterval");
  streamInterval_->setRange(1, 64);
  streamInterval_->setValue(1);
  streamInterval_->setToolTip(tr("Tokens per SSE write after each stream's first (serve --stream-interval). 1 sends "
                                 "every token as it comes, as vLLM does; more costs the CPU less per token where the "
                                 "server, the client and the model share the cores, and streams arrive in bursts"));
  stopServerButton_ = new QPushButton(tr("Stop server"), box);
  stopServerButton_->setObjectName("stopServerButton");
  connect(stopServerButton_, &QPushButton::clicked, this, &BenchmarksPanel::stopServer);
  form->addRow(tr("Model folder"), dirRow);
  form->addRow(tr("Adapters"), adapters_);
  form->addRow(tr("LoRA"), loraMode_);
  form->addRow(tr("dtype"), dtype_);
  form->addRow(tr("Max batch"), maxBatch_);
  form->addRow(tr("Stream interval"), streamInterval_);
  form->addRow(stopServerButton_);
  return box;
}

bool BenchmarksPanel::localEndpoint() const { return endpointKind_->currentIndex() == 1; }
bool BenchmarksPanel::boxEndpoint() const { return endpointKind_->currentIndex() == 2; }

void BenchmarksPanel::fillLocalDefaults() {
  const QString base = session_->isOpen() ? QDir(session_->path()).filePath("models/demo-base") : QString();
  const QString current = serveModelDir_->text().trimmed();
  if (current.isEmpty() || current == defaultModelDir_) {
    defaultModelDir_ = QFileInfo(base + "/config.json").isFile() ? base : QString();
    serveModelDir_->setText(defaultModelDir_);
  }
  adapters_->clear();
  if (!session_->isOpen()) return;
  const QDir runs(QDir(session_->path()).filePath("runs"));
  for (const QFileInfo& run : runs.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    if (!QFileInfo(run.filePath() + "/adapter_config.json").isFile() || run.fileName().contains('=')) continue;
    auto* item = new QListWidgetItem(run.fileName(), adapters_);
    item->setData(Qt::UserRole, run.absoluteFilePath());
    item->setToolTip(run.absoluteFilePath());
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
  }
}

void BenchmarksPanel::updateEndpointUi() {
  const bool onBox = boxEndpoint();
  const bool local = localEndpoint() || onBox;  // a server the panel starts (here or on a box)
  if (local && !shownLocal_) typedUrl_ = url_->text();  // kept for when URL is picked again
  localBox_->setVisible(localEndpoint());
  boxForm_->setVisible(onBox);
  url_->setReadOnly(local);
  if (onBox) {
    url_->setText(boxForm_->server()->baseUrl());
    url_->setPlaceholderText(tr("set when the server on the box answers through the tunnel"));
  } else if (local) {
    url_->setText(server_->state() == backends::LocalServeProcess::State::Ready ? server_->baseUrl() : QString());
    url_->setPlaceholderText(tr("set when the local server is up"));
  } else {
    if (shownLocal_) url_->setText(typedUrl_);
    url_->setPlaceholderText(QString());
  }
  shownLocal_ = local;
  model_->setPlaceholderText(local ? tr("default: the served model (folder name, or the merged adapter)")
                                   : tr("model or adapter id"));
  stopServerButton_->setEnabled(server_->isRunning());
}

QStringList BenchmarksPanel::serveArgs(QString* error) const {
  const QString dir = serveModelDir_->text().trimmed();
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) {
    *error = dir.isEmpty() ? tr("Pick the model folder for the local server.") : tr("%1 is not a folder.").arg(dir);
    return {};
  }
  QStringList a{"--model", dir, "--dtype", dtype_->currentText(), "--max-batch", QString::number(maxBatch_->value())};
  QStringList names;
  for (int i = 0; i < adapters_->count(); ++i) {
    const auto* item = adapters_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    names << item->text();
    a << "--lora" << item->text() + "=" + item->data(Qt::UserRole).toString();
  }
  if (loraMode_->currentIndex() == 1) {
    if (names.size() != 1) {
      *error = tr("Merged serving takes exactly one checked adapter.");
      return {};
    }
    a << "--merge" << names.first();
  }
  if (streamInterval_->value() > 1) a << "--stream-interval" << QString::number(streamInterval_->value());
  return a;
}

QStringList BenchmarksPanel::checkedAdapters() const {
  QStringList names;
  for (int i = 0; i < adapters_->count(); ++i)
    if (adapters_->item(i)->checkState() == Qt::Checked) names << adapters_->item(i)->text();
  return names;
}

// Ticking one adapter makes it the model the sweep asks for (shown in the Model field, so
// the table's row says what was measured); a model the user typed is left alone.
void BenchmarksPanel::followCheckedAdapter() {
  const QString typed = model_->text().trimmed();
  if (!typed.isEmpty() && typed != autoModel_) return;
  const QStringList checked = checkedAdapters();
  autoModel_ = checked.size() == 1 ? checked.first() : QString();
  model_->setText(autoModel_);
}

QString BenchmarksPanel::servedModelId(QString* error) const {
  const QString typed = model_->text().trimmed();
  if (!typed.isEmpty()) return typed;
  const QStringList checked = checkedAdapters();
  if (checked.size() == 1) return checked.first();  // ticking an adapter benchmarks it (runtime or merged)
  if (checked.size() > 1) {
    if (error) *error = tr("Several adapters are checked: type the one to benchmark in Model.");
    return {};
  }
  return QFileInfo(QDir::cleanPath(serveModelDir_->text().trimmed())).fileName();  // serve's default id
}

void BenchmarksPanel::onServerReady(const QString& baseUrl) {
  spdlog::info("local server ready at {}", baseUrl.toStdString());
  updateEndpointUi();
  if (!sweepPending_) return;
  sweepPending_ = false;
  startSweep();
}

void BenchmarksPanel::onServerFailed(const QString& error) {
  spdlog::warn("local server: {}", error.toStdString());
  restartArgs_.clear();
  if (sweepPending_) {
    sweepPending_ = false;
    runButton_->setEnabled(true);
    stopButton_->setEnabled(false);
    resetProgress(tr("failed"));
  }
  setStatus(tr("Local server failed: %1").arg(error));
  updateEndpointUi();
}

void BenchmarksPanel::stopServer() {
  const bool wasPending = sweepPending_;
  sweepPending_ = false;
  restartArgs_.clear();
  if (metricsPending_ && (sweepOnBox_ || sweepOnLocal_)) stop();  // its sweep has not started: it never will
  if (boxForm_->server()->state() != remote::RemoteServer::State::Idle) {
    if (sweepOnBox_ && process_->isRunning()) process_->stop();
    boxForm_->server()->stop();
  }
  if (!server_->isRunning() && server_->state() == backends::LocalServeProcess::State::Idle) return;
  if (sweepOnLocal_ && process_->isRunning()) process_->stop();  // a sweep against it would only fail
  server_->stop();
  if (wasPending) {
    runButton_->setEnabled(true);
    stopButton_->setEnabled(false);
    resetProgress(tr("idle"));
  }
  setStatus(tr("Local server stopped."));
}

QStringList BenchmarksPanel::sweepArgs() const {
  const bool local = localEndpoint();
  const bool onBox = boxEndpoint();
  const QString typedModel = model_->text().trimmed();
  QStringList a{"--url", onBox ? boxForm_->server()->baseUrl() : local ? server_->baseUrl() : url_->text().trimmed(),
                "--model", onBox ? (typedModel.isEmpty() ? boxForm_->servedModelId() : typedModel)
                                 : local ? servedModelId(nullptr) : typedModel,
                "--endpoint",
                endpoint_->currentText(), "--concurrency", levels_->text().remove(' '), "--output-len",
                QString::number(outputLen_->value())};
  if (numPrompts_->value() > 0) a << "--num-prompts" << QString::number(numPrompts_->value());
  if (warmup_->value() > 0) a << "--warmup" << QString::number(warmup_->value());
  if (price_->value() > 0) a << "--price-per-hour" << QString::number(price_->value());
  if (!label_->text().trimmed().isEmpty()) a << "--label" << label_->text().trimmed();
  if (session_->isOpen()) a << "--lab" << session_->path();
  // The benchmark row names the box it measured (the ledger books the work on its life).
  if (onBox) a << "--box" << QString::fromStdString(boxForm_->server()->spec().box.name);
  return a;
}

bool BenchmarksPanel::runOnBox() {
  QString error;
  const auto spec = boxForm_->spec(&error);
  if (!spec) {
    setStatus(error);
    return false;
  }
  auto* server = boxForm_->server();
  const bool same = server->state() == remote::RemoteServer::State::Ready &&
                    venues::shellJoin(venues::serveArgv(server->spec().serve)) == venues::shellJoin(venues::serveArgv(spec->serve)) &&
                    server->spec().box.id == spec->box.id;
  if (same) {
    startSweep();
    return true;
  }
  if (server->state() != remote::RemoteServer::State::Idle) {
    setStatus(tr("Another server is up on the box: stop it first."));
    return false;
  }
  sweepPending_ = true;
  runButton_->setEnabled(false);
  stopButton_->setEnabled(true);
  progress_->setRange(0, 0);  // busy until /health answers through the tunnel
  levelLabel_->setText(tr("starting server on %1…").arg(QString::fromStdString(spec->box.name)));
  setStatus(tr("Starting %1 on %2 …").arg(QString::fromStdString(spec->serve.engine), QString::fromStdString(spec->box.name)));
  server->start(*spec);
  updateEndpointUi();
  return true;
}

bool BenchmarksPanel::run() {
  if (isRunning() || sweepPending_) return false;
  if (boxEndpoint()) return runOnBox();
  if (localEndpoint()) {
    QString error;
    const QStringList args = serveArgs(&error);
    if (args.isEmpty() || servedModelId(&error).isEmpty()) {
      setStatus(error);
      return false;
    }
    if (server_->state() == backends::LocalServeProcess::State::Ready && server_->serveArgs() == args) {
      startSweep();  // the same server is up: reuse it
      return true;
    }
    sweepPending_ = true;
    runButton_->setEnabled(false);
    stopButton_->setEnabled(true);
    progress_->setRange(0, 0);  // busy until /health answers
    levelLabel_->setText(tr("starting server…"));
    setStatus(tr("Starting the local server (%1)…").arg(QFileInfo(args[1]).fileName()));
    if (server_->isRunning() || server_->state() != backends::LocalServeProcess::State::Idle) {
      restartArgs_ = args;  // other settings: stop the running one first
      server_->stop();
    } else {
      server_->start(args);
    }
    updateEndpointUi();
    return true;
  }
  if (url_->text().trimmed().isEmpty() || model_->text().trimmed().isEmpty()) {
    setStatus(tr("Enter the endpoint URL and the model."));
    return false;
  }
  startSweep();
  return true;
}

void BenchmarksPanel::startSweep() {
  live_->clear();
  charts_->setCurrentWidget(live_);
  levelIndex_ = 0;
  warmingUp_ = false;
  timeOffset_ = lastT_ = 0;
  resetProgress(tr("starting sweep…"));
  setStatus(session_->isOpen() ? tr("Running…") : tr("Running — no lab is open, so results are not recorded."));
  sweepOnLocal_ = localEndpoint();
  sweepOnBox_ = boxEndpoint();
  clientOutputTokens_ = 0;
  sweepWarmup_ = warmup_->value();
  sweepArgs_ = sweepArgs();
  runButton_->setEnabled(false);
  stopButton_->setEnabled(true);
  // The server's counters first: what it did over the sweep is then the difference between
  // that read and the one after the sweep (a server with no /metrics is asked once).
  metricsPending_ = true;
  serverLabel_->setText(tr("Server: reading its /metrics …"));
  metrics_->start(sweepArgs_.value(1));
  updateEndpointUi();
}

void BenchmarksPanel::launchBench() {
  warmingUp_ = sweepWarmup_ > 0;
  if (warmingUp_) {  // bench says nothing until its first level: say what it does meanwhile
    progress_->setRange(0, 0);
    levelLabel_->setText(sweepWarmup_ == 1 ? tr("warming up: 1 request, not measured…")
                                           : tr("warming up: %1 requests, not measured…").arg(sweepWarmup_));
  }
  process_->start(sweepArgs_);
  updateEndpointUi();
}

void BenchmarksPanel::stop() {
  if (metricsPending_) {  // the sweep has not started: nothing was sent
    metricsPending_ = false;
    metrics_->stop();
    serverLabel_->clear();
    onFinished(0, QString(), true);
  } else if (process_->isRunning()) {
    process_->stop();
  } else if (sweepPending_) {  // cancel a server that is still starting (here or on a box)
    stopServer();
    setStatus(tr("Server start cancelled."));
  }
}

bool BenchmarksPanel::isRunning() const { return process_->isRunning() || metricsPending_; }

void BenchmarksPanel::onLevelStarted(int concurrency, int planned) {
  timeOffset_ = lastT_;  // levels follow each other on one time axis
  ++levelIndex_;
  warmingUp_ = false;
  // the sweep's levels as clicked (the field may hold the next sweep's by now)
  const int total = static_cast<int>(
      sweepArgs_.value(sweepArgs_.indexOf("--concurrency") + 1).split(',', Qt::SkipEmptyParts).size());
  levelLabel_->setText(tr("level c=%1 (%2 of %3)").arg(concurrency).arg(levelIndex_).arg(total));
  progress_->setRange(0, std::max(planned, 1));
  progress_->setValue(0);
  progress_->setTextVisible(planned > 0);  // a timed level has no fraction
}

void BenchmarksPanel::resetProgress(const QString& label) {
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setTextVisible(false);  // "0%" of nothing is not a figure
  levelLabel_->setText(label);
}

void BenchmarksPanel::onFinished(int exitCode, const QString& error, bool stopped) {
  metrics_->finish();  // the server's counters once more: serverLabel_ then says what it did
  const bool inWarmUp = std::exchange(warmingUp_, false);
  runButton_->setEnabled(true);
  stopButton_->setEnabled(false);
  if (stopped) {
    resetProgress(tr("stopped"));
    setStatus(inWarmUp ? tr("Stopped during the warm-up; nothing was measured.")
                       : tr("Stopped; finished levels are kept."));
  } else if (exitCode != 0) {
    resetProgress(tr("failed"));
    setStatus(tr("Sweep failed: %1").arg(error));
  } else {
    progress_->setRange(0, 1);
    progress_->setValue(1);
    progress_->setTextVisible(true);
    levelLabel_->setText(levelIndex_ == 1 ? tr("done: 1 level") : tr("done: %1 levels").arg(levelIndex_));
    setStatus(tr("Sweep done. %1").arg(status_->text()));
  }
  reload();
  emit sweepFinished(exitCode);
}

QString BenchmarksPanel::status() const { return status_->text(); }

QString BenchmarksPanel::serverView() const { return serverLabel_->text(); }

void BenchmarksPanel::setStatus(const QString& text) { status_->setText(text); }

}  // namespace crosslab::widgets
