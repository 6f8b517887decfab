#include "widgets/venues_panel.h"

#include <QCheckBox>
#include <QEventLoop>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <set>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "backends/providers/hotaisle_venue.h"
#include "core/store/lab_store.h"
#include "widgets/background_job.h"
#include "widgets/boxes_model.h"
#include "widgets/ladder_view.h"
#include "widgets/offers_model.h"
#include "widgets/venue_dialogs.h"
#include "widgets/file_dialogs.h"

namespace crosslab::widgets {
namespace {

double nowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

QString money(double usd) { return QString("$%1").arg(usd, 0, 'f', 2); }

// Lab settings the form keeps (the lab's settings table).
constexpr const char* kApiUrlKey = "venues.api_url";
constexpr const char* kTeamKey = "venues.team";
constexpr const char* kKeyVarKey = "venues.api_key_env";
constexpr const char* kIdleKey = "venues.idle_minutes";
constexpr const char* kTimeoutKey = "venues.provider_timeout_s";
constexpr const char* kShowEndedKey = "venues.show_ended";

}  // namespace

VenuesPanel::VenuesPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), offers_(new OffersModel(this)), offersProxy_(new QSortFilterProxyModel(this)),
      boxes_(new BoxesModel(this)), knownHosts_(backends::crosslabHome() + "/known_hosts") {
  confirm_ = [this](const QString& title, const QString& text) {
    // Money and trust: Enter must not say yes.
    return QMessageBox::question(this, title, text, QMessageBox::Yes | QMessageBox::No, QMessageBox::No) ==
           QMessageBox::Yes;
  };
  askPassphrase_ = [this](const QString& keyFile) -> std::optional<QString> {
    bool ok = false;
    QString answer = QInputDialog::getText(this, tr("Key passphrase"), tr("Passphrase for %1:").arg(keyFile),
                                           QLineEdit::Password, QString(), &ok);
    if (!ok) return std::nullopt;
    return answer;
  };
  chooseFile_ = [this](const QString& title, const QString& suggested, bool save) {
    return save ? FileDialog::saveFile(this, title, suggested) : FileDialog::openFile(this, title, suggested);
  };
  askClose_ = [this](const QString& text) {
    QMessageBox box(QMessageBox::Warning, tr("Boxes still bill"), text, QMessageBox::NoButton, this);
    box.setObjectName("billingQuestion");
    auto* down = box.addButton(tr("Tear down"), QMessageBox::DestructiveRole);
    down->setObjectName("tearDownAndClose");
    auto* leave = box.addButton(tr("Leave running"), QMessageBox::AcceptRole);
    leave->setObjectName("leaveRunning");
    auto* stay = box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(stay);
    box.setEscapeButton(stay);
    box.exec();
    if (box.clickedButton() == down) return CloseChoice::TearDown;
    if (box.clickedButton() == leave) return CloseChoice::LeaveRunning;
    return CloseChoice::Cancel;
  };
  auto* layout = new QVBoxLayout(this);
  // The panel's header: what bills now and what it cost so far, seen from every tab.
  total_ = new QLabel(this);
  total_->setObjectName("totalCost");
  total_->setWordWrap(true);
  total_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(total_);
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("venuesTabs");
  buildOffersTab(tabs_);
  buildBoxesTab(tabs_);
  ladder_ = new LadderView(session_, tabs_);
  tabs_->addTab(ladder_, tr("Ladder"));
  connect(ladder_, &LadderView::status, this, &VenuesPanel::setStatus);
  // A hint belongs to the tab it was given on.
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
    if (statusIsHint_ && !job_) setStatus(tr("Ready"));
    if (tabs_->widget(index) == ladder_) ladder_->refresh();  // what the lab holds now
  });
  layout->addWidget(tabs_, 1);
  auto* bar = new QHBoxLayout;
  status_ = new QLabel(tr("Ready"), this);
  status_->setObjectName("venuesStatus");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_ = new QProgressBar(this);
  progress_->setObjectName("venuesProgress");
  progress_->setRange(0, 0);  // busy: provider and SSH calls report no fraction
  progress_->setMaximumWidth(220);
  progress_->setVisible(false);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("venuesCancel");
  cancel_->setVisible(false);
  connect(cancel_, &QPushButton::clicked, this, &VenuesPanel::cancelJob);
  bar->addWidget(status_, 1);
  bar->addWidget(progress_);
  bar->addWidget(cancel_);
  layout->addLayout(bar);
  auto* timer = new QTimer(this);
  connect(timer, &QTimer::timeout, this, &VenuesPanel::tickMeter);
  timer->start(1000);
  connect(session_, &backends::LabSession::labChanged, this, [this] {
    loadSettings();
    logs_.clear();
    log_->clear();
    offers_->setOffers({});  // another lab, perhaps another team: fetch again
    refresh();
  });
  connect(session_, &backends::LabSession::labDataChanged, this, &VenuesPanel::refresh);
  // The window asks before quitting, closing or switching the lab (LabSession close checks).
  session_->addCloseCheck(this, [this](backends::LabSession::CloseReason r) {
    return confirmClose(r == backends::LabSession::CloseReason::Quit ? tr("Quit") : tr("Close the lab"));
  });
  loadSettings();
  refresh();
}

VenuesPanel::~VenuesPanel() { delete job_; }  // cancels and waits for its thread

void VenuesPanel::buildOffersTab(QTabWidget* tabs) {
  auto* page = new QWidget(tabs);
  auto* v = new QVBoxLayout(page);
  auto* form = new QFormLayout;
  apiUrl_ = new QLineEdit(QString::fromLatin1("https://admin.hotaisle.app/api"), page);
  apiUrl_->setObjectName("apiUrlEdit");
  team_ = new QLineEdit(page);
  team_->setObjectName("teamEdit");
  apiKeyEnv_ = new QLineEdit(QString::fromLatin1(providers::kHotAisleKeyVar), page);
  apiKeyEnv_->setObjectName("apiKeyEnvEdit");
  apiKeyEnv_->setToolTip(tr("The environment variable holding the key (else the OS keyring entry hotaisle-api-key). "
                            "The key itself is never stored or shown."));
  providerTimeout_ = new QSpinBox(page);
  providerTimeout_->setObjectName("providerTimeoutSpin");
  providerTimeout_->setRange(5, 600);
  providerTimeout_->setValue(90);
  providerTimeout_->setSuffix(tr(" s"));
  providerTimeout_->setToolTip(tr("How long one provider call may take, retries included, before crosslab gives up"));
  form->addRow(tr("Hot Aisle API"), apiUrl_);
  form->addRow(tr("Team"), team_);
  form->addRow(tr("API key variable"), apiKeyEnv_);
  form->addRow(tr("Give up after"), providerTimeout_);
  v->addLayout(form);
  connect(apiUrl_, &QLineEdit::editingFinished, this, [this] { saveSetting(kApiUrlKey, apiUrl_->text().trimmed()); });
  connect(team_, &QLineEdit::editingFinished, this, [this] { saveSetting(kTeamKey, team_->text().trimmed()); });
  connect(apiKeyEnv_, &QLineEdit::editingFinished, this,
          [this] { saveSetting(kKeyVarKey, apiKeyEnv_->text().trimmed()); });
  connect(providerTimeout_, qOverload<int>(&QSpinBox::valueChanged), this,
          [this](int s) { saveSetting(kTimeoutKey, QString::number(s)); });
  offersProxy_->setSourceModel(offers_);
  offersProxy_->setSortRole(Qt::UserRole);
  offersTable_ = new QTableView(page);
  offersTable_->setObjectName("offersTable");
  offersTable_->setModel(offersProxy_);
  offersTable_->setSortingEnabled(true);
  offersTable_->sortByColumn(OffersModel::PerGpuHour, Qt::AscendingOrder);
  offersTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
  offersTable_->setSelectionMode(QAbstractItemView::SingleSelection);
  offersTable_->horizontalHeader()->setStretchLastSection(true);
  v->addWidget(offersTable_, 1);
  auto* buttons = new QHBoxLayout;
  fetch_ = new QPushButton(tr("Fetch offers"), page);
  fetch_->setObjectName("fetchOffersButton");
  provision_ = new QPushButton(tr("Provision…"), page);
  provision_->setObjectName("provisionButton");
  connect(fetch_, &QPushButton::clicked, this, &VenuesPanel::fetchOffers);
  connect(provision_, &QPushButton::clicked, this, [this] {
    const auto sel = offersTable_->selectionModel()->selectedRows();
    if (sel.isEmpty()) return hint(tr("Choose an offer first"));
    provisionOffer(sel.first().row());
  });
  buttons->addWidget(fetch_);
  buttons->addStretch();
  buttons->addWidget(provision_);
  v->addLayout(buttons);
  tabs->addTab(page, tr("Offers"));
}

void VenuesPanel::buildBoxesTab(QTabWidget* tabs) {
  auto* page = new QWidget(tabs);
  auto* v = new QVBoxLayout(page);
  auto* split = new QSplitter(Qt::Vertical, page);
  boxesTable_ = new QTableView(split);
  boxesTable_->setObjectName("boxesTable");
  boxesTable_->setModel(boxes_);
  boxesTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
  boxesTable_->setSelectionMode(QAbstractItemView::SingleSelection);
  boxesTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);  // addresses in full
  boxesTable_->horizontalHeader()->setStretchLastSection(true);
  boxesTable_->verticalHeader()->setVisible(false);
  log_ = new QPlainTextEdit(split);
  log_->setObjectName("boxLog");
  log_->setReadOnly(true);
  log_->setFont(QFont(QStringLiteral("monospace")));
  log_->setMaximumBlockCount(5000);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  connect(boxesTable_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
    log_->setPlainText(i.isValid() ? logs_.value(QString::fromStdString(boxes_->row(i.row()).box.name)) : QString());
    log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
  });
  auto button = [this, page](const QString& text, const char* name) {
    auto* b = new QPushButton(text, page);
    b->setObjectName(name);
    boxActions_ << b;
    return b;
  };
  auto* top = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add box…"), page);
  add->setObjectName("addBoxButton");
  add->setToolTip(tr("A machine reachable by SSH: a workstation, a DGX Spark, a Mac, a VM rented elsewhere"));
  connect(add, &QPushButton::clicked, this, &VenuesPanel::addBox);
  showEnded_ = new QCheckBox(tr("Show ended lives"), page);
  showEnded_->setObjectName("showEndedCheck");
  connect(showEnded_, &QCheckBox::toggled, this, [this](bool on) {
    saveSetting(kShowEndedKey, on ? "1" : "0");
    reloadBoxes();
  });
  idleMinutes_ = new QSpinBox(page);
  idleMinutes_->setObjectName("idleMinutesSpin");
  idleMinutes_->setRange(1, 24 * 60);
  idleMinutes_->setValue(30);
  idleMinutes_->setSuffix(tr(" min idle warns"));
  connect(idleMinutes_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int m) {
    boxes_->setIdleThresholdSeconds(m * 60.0);
    saveSetting(kIdleKey, QString::number(m));
  });
  auto* teardown = button(tr("Tear down…"), "teardownButton");
  connect(teardown, &QPushButton::clicked, this, [this] {
    if (const int row = requireBox(tr("tear down")); row >= 0) teardownBox(row);
  });
  top->addWidget(add);
  top->addWidget(showEnded_);
  top->addStretch();
  top->addWidget(idleMinutes_);
  top->addWidget(teardown);
  v->insertLayout(0, top);
  auto* run = new QHBoxLayout;
  command_ = new QLineEdit(page);
  command_->setObjectName("commandEdit");
  command_->setPlaceholderText(tr("command to run on the selected box"));
  auto* runButton = button(tr("Run"), "runButton");
  auto runIt = [this] {
    if (const int row = requireBox(tr("run a command on")); row >= 0) runOnBox(row, command_->text());
  };
  connect(command_, &QLineEdit::returnPressed, this, runIt);
  connect(runButton, &QPushButton::clicked, this, runIt);
  run->addWidget(command_, 1);
  run->addWidget(runButton);
  v->addLayout(run);
  auto* files = new QHBoxLayout;
  remotePath_ = new QLineEdit(page);
  remotePath_->setObjectName("remotePathEdit");
  remotePath_->setPlaceholderText(tr("path on the box (relative to the login folder)"));
  auto* push = button(tr("Push file…"), "pushButton");
  auto* pull = button(tr("Pull file…"), "pullButton");
  connect(push, &QPushButton::clicked, this, [this] {
    if (const int row = requireBox(tr("push a file to")); row >= 0) pushToBox(row);
  });
  connect(pull, &QPushButton::clicked, this, [this] {
    if (const int row = requireBox(tr("pull a file from")); row >= 0) pullFromBox(row);
  });
  files->addWidget(remotePath_, 1);
  files->addWidget(push);
  files->addWidget(pull);
  v->addLayout(files);
  tabs->addTab(page, tr("Boxes"));
}

QTableWidget* VenuesPanel::ladderTable() const { return ladder_->ladderTable(); }
QString VenuesPanel::timelineSummary() const { return ladder_->timelineSummary(); }
QString VenuesPanel::statusText() const { return status_->text(); }
bool VenuesPanel::busy() const { return !job_.isNull(); }

void VenuesPanel::setStatus(const QString& text) {
  statusIsHint_ = false;
  status_->setText(text);
}

void VenuesPanel::hint(const QString& text) {
  setStatus(text);
  statusIsHint_ = true;
}

void VenuesPanel::setProviderSettings(const QString& apiUrl, const QString& team, const QString& apiKeyEnv) {
  apiUrl_->setText(apiUrl);
  team_->setText(team);
  apiKeyEnv_->setText(apiKeyEnv);
  saveSetting(kApiUrlKey, apiUrl);
  saveSetting(kTeamKey, team);
  saveSetting(kKeyVarKey, apiKeyEnv);
}

void VenuesPanel::loadSettings() {
  auto* lab = session_->store();
  if (!lab) return;
  loadingSettings_ = true;
  auto value = [lab](const char* key) { return QString::fromStdString(lab->setting(key)); };
  apiUrl_->setText(value(kApiUrlKey).isEmpty() ? QString::fromLatin1("https://admin.hotaisle.app/api") : value(kApiUrlKey));
  team_->setText(value(kTeamKey));
  apiKeyEnv_->setText(value(kKeyVarKey).isEmpty() ? QString::fromLatin1(providers::kHotAisleKeyVar) : value(kKeyVarKey));
  idleMinutes_->setValue(value(kIdleKey).isEmpty() ? 30 : value(kIdleKey).toInt());
  providerTimeout_->setValue(value(kTimeoutKey).isEmpty() ? 90 : value(kTimeoutKey).toInt());
  showEnded_->setChecked(value(kShowEndedKey) == "1");
  loadingSettings_ = false;
}

void VenuesPanel::saveSetting(const char* key, const QString& value) {
  auto* lab = session_->store();
  if (!lab || loadingSettings_) return;
  try {
    lab->setSetting(key, value.toStdString());
  } catch (const std::exception& e) {
    setStatus(tr("Could not keep the setting in the lab: %1").arg(QString::fromStdString(e.what())));
  }
}

void VenuesPanel::post(std::function<void()> fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); }

void VenuesPanel::appendLog(const QString& box, const QString& text) {
  logs_[box] += text;
  const auto sel = boxesTable_->selectionModel()->selectedRows();
  if (sel.isEmpty() || QString::fromStdString(boxes_->row(sel.first().row()).box.name) != box) return;
  // Follow new output, unless the reader scrolled up to read something.
  auto* bar = log_->verticalScrollBar();
  const bool following = bar->value() >= bar->maximum() - 2;
  QTextCursor end(log_->document());
  end.movePosition(QTextCursor::End);
  end.insertText(text);
  if (following) bar->setValue(bar->maximum());
}

int VenuesPanel::requireBox(const QString& action) {
  const auto sel = boxesTable_->selectionModel()->selectedRows();
  if (sel.isEmpty()) {
    hint(boxes_->rowCount() == 0 ? tr("No box to %1: add one or rent one from Offers").arg(action)
                                 : tr("Select a box to %1 first").arg(action));
    return -1;
  }
  return sel.first().row();
}

void VenuesPanel::setBusyUi(bool busy) {
  fetch_->setEnabled(!busy);
  provision_->setEnabled(!busy);  // no second rent while one is in flight
  for (auto* b : boxActions_) b->setEnabled(!busy);
  progress_->setVisible(busy);
  cancel_->setVisible(busy);
  cancel_->setEnabled(busy);
  if (busy) progress_->setRange(0, 0);
}

void VenuesPanel::setTransferProgress(std::uint64_t done, std::uint64_t total) {
  progress_->setRange(0, 1000);
  progress_->setValue(total ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0);
}

void VenuesPanel::startJob(const QString& label, Work work, Done done) {
  if (job_) return hint(tr("Busy: %1 (Cancel it first)").arg(job_->label()));
  auto* job = new BackgroundJob(label, std::move(work), this);
  job_ = job;
  setStatus(label + "…");
  setBusyUi(true);
  connect(job, &BackgroundJob::finished, this, [this, job, done, label](const QString& error) {
    job_ = nullptr;
    job->deleteLater();
    setBusyUi(false);
    setStatus(error.isEmpty() ? label + tr(": done") : error);
    done(error);
    emit jobFinished(error.isEmpty(), error.isEmpty() ? label : error);
  });
  job->start();
}

void VenuesPanel::cancelJob() {
  if (!job_) return;
  job_->cancel();
  cancel_->setEnabled(false);
  setStatus(tr("Cancelling %1…").arg(job_->label()));
}

void VenuesPanel::refresh() {
  reloadBoxes();
  ladder_->refresh();
}

void VenuesPanel::reloadBoxes() {
  auto* lab = session_->store();
  if (!lab) {
    boxes_->setRows({});
    total_->setText(tr("Open a lab to record boxes and their cost."));
    return;
  }
  const auto sel = boxesTable_->selectionModel()->selectedRows();
  const std::int64_t keep = sel.isEmpty() ? 0 : boxes_->row(sel.first().row()).box.id;
  venues::VenueStore store(*lab);
  const double now = nowEpoch();
  std::vector<BoxesModel::Row> rows;
  for (const auto& b : store.boxes(showEnded_->isChecked())) {
    const double idle = b.active() ? store.idleSeconds(b, now) : 0.0;
    rows.push_back({b, store.meter(b, now), idle, now - idle});
  }
  boxes_->setRows(std::move(rows));
  for (int r = 0; keep && r < boxes_->rowCount(); ++r)
    if (boxes_->row(r).box.id == keep && !boxesTable_->selectionModel()->isRowSelected(r, {})) boxesTable_->selectRow(r);
  updateTotal();
}

void VenuesPanel::updateTotal() {
  if (!session_->store()) return;
  if (boxes_->rowCount() == 0) {
    total_->setText(tr("No active boxes: nothing billing. Rent one from Offers, or Add box… for a machine reachable by SSH."));
    return;
  }
  int active = 0, billing = 0;
  double perHour = 0;
  for (int r = 0; r < boxes_->rowCount(); ++r) {
    const auto& b = boxes_->row(r).box;
    active += b.active();
    if (b.billing()) ++billing, perHour += *b.pricePerHour;
  }
  QString text = tr("Running cost %1 across %2 active box(es)").arg(money(boxes_->activeCost())).arg(active);
  text += billing ? tr(" — %n billing at %1/h", nullptr, billing).arg(money(perHour)) : tr(" — nothing billing");
  if (const int idle = boxes_->idleCount()) text += tr(" — %1 idle and still billing").arg(idle);
  total_->setText(text);
}

// The meter, each second: uptime, cost and idle time of the lives held, moved on to now
// without reading the lab (what the lab holds is re-read when it changes: labDataChanged,
// and after this panel's own writes).
void VenuesPanel::tickMeter() {
  if (!session_->store()) return;
  boxes_->tick(nowEpoch());
  updateTotal();
}

std::vector<venues::BoxRow> VenuesPanel::billingBoxes() const {
  std::vector<venues::BoxRow> out;
  for (int r = 0; r < boxes_->rowCount(); ++r)
    if (boxes_->row(r).box.billing()) out.push_back(boxes_->row(r).box);
  return out;
}

providers::HotAisleOptions VenuesPanel::formOptions() const {
  providers::HotAisleOptions o;
  o.baseUrl = apiUrl_->text().trimmed();
  o.team = team_->text().trimmed();
  o.deadlineMs = providerTimeout_->value() * 1000;
  o.timeoutMs = std::min(o.timeoutMs, o.deadlineMs);
  return o;
}

void VenuesPanel::fetchOffers() {
  providers::HotAisleOptions opt = formOptions();
  const QString keyVar = apiKeyEnv_->text();
  auto result = std::make_shared<std::vector<providers::Offer>>();
  offers_->setOffers({});  // nothing stale stays provisionable while fetching
  startJob(
      tr("Fetching offers"),
      [opt, keyVar, result](const std::atomic<bool>& cancel) mutable {
        opt.cancel = &cancel;
        opt.apiKey = providers::hotAisleKey(keyVar);
        *result = providers::HotAisleClient(opt).offers();
      },
      [this, result](const QString& error) {
        if (!error.isEmpty()) return;
        offers_->setOffers(*result);
        if (auto* lab = session_->store()) {
          venues::VenueStore store(*lab);
          providers::recordOffersProbe(store, *result);
          ladder_->refresh();
        }
        setStatus(tr("%n offer(s) on the shelf", nullptr, static_cast<int>(result->size())));
      });
}

void VenuesPanel::provisionOffer(int viewRow) {
  auto* lab = session_->store();
  if (!lab) return hint(tr("Open a lab first: every box life is recorded in it"));
  if (job_) return hint(tr("Busy: %1 (Cancel it first)").arg(job_->label()));
  const int src = offersProxy_->mapToSource(offersProxy_->index(viewRow, 0)).row();
  if (src < 0) return hint(tr("Choose an offer first"));
  const providers::Offer offer = offers_->offer(src);
  if (!confirm_(tr("Provision"), rentQuestion(offer))) return setStatus(tr("Provisioning cancelled: nothing rented"));
  providers::HotAisleOptions opt = formOptions();
  const QString keyVar = apiKeyEnv_->text();
  venues::VenueStore store(*lab);
  std::set<std::string> known;
  for (const auto& b : store.boxes())
    if (b.rented()) known.insert(b.providerVm);
  store.addMilestone(providers::kHotAisle, venues::milestone::kProvisionRequest, store::utcNow(),
                     offer.gpuModel + " x" + std::to_string(offer.gpuCount));
  auto boxId = std::make_shared<std::int64_t>(0);
  auto vmName = std::make_shared<std::string>();
  const int pollMs = pollMs_;
  // Records a VM as a box life (on the GUI thread); its id.
  auto record = [this, offer, keyVar](providers::HotAisleOptions o, providers::Vm vm) {
    venues::VenueStore s(*session_->store());
    auto b = providers::boxForVm(s, vm, offer, o, keyVar);
    if (!vm.state.empty() && vm.state != "provisioning") b.state = vm.state;
    b.id = s.addBox(b);
    s.noteLifeMilestone(b, venues::milestone::kProvisioned, vm.name);
    return b.id;
  };
  startJob(
      tr("Provisioning %1× %2").arg(offer.gpuCount).arg(QString::fromStdString(offer.gpuModel)),
      [this, opt, keyVar, offer, known, boxId, vmName, pollMs, record](const std::atomic<bool>& cancel) mutable {
        opt.cancel = &cancel;
        opt.apiKey = providers::hotAisleKey(keyVar);
        const auto outcome = providers::provisionOnce(opt, offer, known);
        if (!outcome.vm) {
          post([this, outcome, opt, record] {  // probably ours: watch their meters
            for (auto vm : outcome.appeared) {
              if (vm.state.empty()) vm.state = "unknown";
              record(opt, vm);
            }
            refresh();
          });
          throw std::runtime_error(providers::describeOutcome(outcome));
        }
        const auto vm = *outcome.vm;
        *vmName = vm.name;
        post([this, vm, opt, boxId, record] {  // billing from here: record it now
          *boxId = record(opt, vm);
          appendLog(QString::fromStdString(vm.name), tr("provisioned at %1\n").arg(QString::fromStdString(vm.ipAddress)));
          refresh();
        });
        providers::HotAisleClient client(opt);
        client.waitRunning(vm.name, pollMs, 900, &cancel, [this, name = vm.name](const std::string& s) {
          post([this, name, s] { appendLog(QString::fromStdString(name), QString::fromStdString("state: " + s + "\n")); });
        });
      },
      [this, boxId, vmName](const QString& error) {
        auto* lab2 = session_->store();
        if (!lab2 || !*boxId) return refresh();
        venues::VenueStore lives(*lab2);
        auto box = lives.box(*boxId);
        if (box && box->active() && error.isEmpty()) {
          lives.markReady(box->id, box->host);
          lives.noteLifeMilestone(*box, venues::milestone::kRunning);
        }
        if (!error.isEmpty())
          appendLog(QString::fromStdString(*vmName), tr("%1\nThe VM may still exist and bill: tear it down.\n").arg(error));
        refresh();
      });
}

void VenuesPanel::waitForJob() {
  if (!job_) return;
  QEventLoop wait;
  connect(this, &VenuesPanel::jobFinished, &wait, &QEventLoop::quit);
  if (job_) wait.exec();
}

bool VenuesPanel::confirmClose(const QString& action) {
  if (!session_->store()) return true;
  reloadBoxes();
  const auto billing = billingBoxes();
  if (billing.empty()) return true;
  std::vector<double> costs;
  const double now = nowEpoch();
  venues::VenueStore store(*session_->store());
  for (const auto& b : billing) costs.push_back(store.meter(b, now).usd);
  const CloseChoice choice = askClose_(billingQuestion(action, billing, costs));
  if (choice == CloseChoice::Cancel) return false;
  if (choice == CloseChoice::LeaveRunning) return true;
  if (job_) {
    job_->cancel();
    waitForJob();
  }
  // Tear down every rented one, one after the other; the window stays alive meanwhile.
  bool allEnded = true;
  for (const auto& b : billing) {
    if (!b.rented()) continue;
    teardownConfirmed(b);
    waitForJob();
    const auto after = store.box(b.id);
    allEnded = allEnded && after && !after->active();
  }
  reloadBoxes();
  if (!allEnded) setStatus(tr("Not every box could be torn down (see its log): %1 did not go ahead").arg(action));
  return allEnded;
}

}  // namespace crosslab::widgets
