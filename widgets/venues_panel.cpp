#include "widgets/venues_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <chrono>

#include "backends/lab_locations.h"
#include "backends/lab_session.h"
#include "backends/providers/hotaisle_client.h"
#include "backends/secrets/keyring.h"
#include "backends/ssh/ssh_session.h"
#include "core/store/lab_store.h"
#include "core/venues/secret_guard.h"
#include "core/venues/venue_store.h"
#include "widgets/boxes_model.h"
#include "widgets/offers_model.h"

namespace crosslab::widgets {
namespace {

double nowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

QString money(double usd) { return QString("$%1").arg(usd, 0, 'f', 2); }

}  // namespace

struct VenuesPanel::Job {
  std::atomic<bool> cancel{false};
  QThread* thread = nullptr;
  QString error;
};

VenuesPanel::VenuesPanel(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), offers_(new OffersModel(this)), offersProxy_(new QSortFilterProxyModel(this)),
      boxes_(new BoxesModel(this)), knownHosts_(backends::crosslabHome() + "/known_hosts") {
  confirm_ = [this](const QString& title, const QString& text) {
    return QMessageBox::question(this, title, text) == QMessageBox::Yes;
  };
  askPassphrase_ = [this](const QString& keyFile) -> std::optional<QString> {
    bool ok = false;
    QString answer = QInputDialog::getText(this, tr("Key passphrase"), tr("Passphrase for %1:").arg(keyFile),
                                           QLineEdit::Password, QString(), &ok);
    if (!ok) return std::nullopt;
    return answer;
  };
  auto* layout = new QVBoxLayout(this);
  auto* tabs = new QTabWidget(this);
  buildOffersTab(tabs);
  buildBoxesTab(tabs);
  buildLadderTab(tabs);
  layout->addWidget(tabs, 1);
  auto* bar = new QHBoxLayout;
  status_ = new QLabel(tr("Ready"), this);
  status_->setObjectName("venuesStatus");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // busy: provider and SSH calls report no fraction
  progress_->setVisible(false);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setVisible(false);
  connect(cancel_, &QPushButton::clicked, this, &VenuesPanel::cancelJob);
  bar->addWidget(status_, 1);
  bar->addWidget(progress_);
  bar->addWidget(cancel_);
  layout->addLayout(bar);
  auto* timer = new QTimer(this);
  connect(timer, &QTimer::timeout, this, &VenuesPanel::tickMeter);
  timer->start(1000);
  connect(session_, &backends::LabSession::labChanged, this, &VenuesPanel::refresh);
  refresh();
}

VenuesPanel::~VenuesPanel() {
  if (!job_) return;
  job_->cancel = true;
  job_->thread->wait();
  delete job_->thread;
  delete job_;
}

void VenuesPanel::buildOffersTab(QTabWidget* tabs) {
  auto* page = new QWidget(tabs);
  auto* v = new QVBoxLayout(page);
  auto* form = new QFormLayout;
  apiUrl_ = new QLineEdit(QStringLiteral("https://admin.hotaisle.app/api"), page);
  team_ = new QLineEdit(page);
  apiKeyEnv_ = new QLineEdit(QStringLiteral("HOTAISLE_API_KEY"), page);
  apiKeyEnv_->setToolTip(tr("The environment variable holding the key. The key itself is never stored or shown."));
  form->addRow(tr("Hot Aisle API"), apiUrl_);
  form->addRow(tr("Team"), team_);
  form->addRow(tr("API key variable"), apiKeyEnv_);
  v->addLayout(form);
  offersProxy_->setSourceModel(offers_);
  offersProxy_->setSortRole(Qt::UserRole);
  offersTable_ = new QTableView(page);
  offersTable_->setObjectName("offersTable");
  offersTable_->setModel(offersProxy_);
  offersTable_->setSortingEnabled(true);
  offersTable_->sortByColumn(OffersModel::PerGpuHour, Qt::AscendingOrder);
  offersTable_->setSelectionBehavior(QAbstractItemView::SelectRows);
  offersTable_->horizontalHeader()->setStretchLastSection(true);
  v->addWidget(offersTable_, 1);
  auto* buttons = new QHBoxLayout;
  auto* fetch = new QPushButton(tr("Fetch offers"), page);
  auto* provision = new QPushButton(tr("Provision…"), page);
  connect(fetch, &QPushButton::clicked, this, &VenuesPanel::fetchOffers);
  connect(provision, &QPushButton::clicked, this, [this] {
    const auto sel = offersTable_->selectionModel()->selectedRows();
    if (sel.isEmpty()) return setStatus(tr("Choose an offer first"));
    provisionOffer(sel.first().row());
  });
  buttons->addWidget(fetch);
  buttons->addStretch();
  buttons->addWidget(provision);
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
  boxesTable_->horizontalHeader()->setStretchLastSection(true);
  log_ = new QPlainTextEdit(split);
  log_->setObjectName("boxLog");
  log_->setReadOnly(true);
  log_->setFont(QFont(QStringLiteral("monospace")));
  log_->setMaximumBlockCount(5000);
  v->addWidget(split, 1);
  connect(boxesTable_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
    log_->setPlainText(i.isValid() ? logs_.value(QString::fromStdString(boxes_->row(i.row()).box.name)) : QString());
  });
  auto* row = new QHBoxLayout;
  command_ = new QLineEdit(page);
  command_->setPlaceholderText(tr("command to run on the selected box"));
  connect(command_, &QLineEdit::returnPressed, this, [this] {
    if (selectedBoxRow() >= 0) runOnBox(selectedBoxRow(), command_->text());
  });
  auto* teardown = new QPushButton(tr("Tear down…"), page);
  connect(teardown, &QPushButton::clicked, this, [this] {
    if (selectedBoxRow() >= 0) teardownBox(selectedBoxRow());
  });
  idleMinutes_ = new QSpinBox(page);
  idleMinutes_->setRange(1, 24 * 60);
  idleMinutes_->setValue(30);
  idleMinutes_->setSuffix(tr(" min idle warns"));
  connect(idleMinutes_, qOverload<int>(&QSpinBox::valueChanged), this,
          [this](int m) { boxes_->setIdleThresholdSeconds(m * 60.0); });
  row->addWidget(command_, 1);
  row->addWidget(idleMinutes_);
  row->addWidget(teardown);
  v->addLayout(row);
  total_ = new QLabel(page);
  total_->setObjectName("totalCost");
  v->addWidget(total_);
  tabs->addTab(page, tr("Boxes"));
}

void VenuesPanel::buildLadderTab(QTabWidget* tabs) {
  auto* page = new QWidget(tabs);
  auto* v = new QVBoxLayout(page);
  ladder_ = new QTableWidget(0, 7, page);
  ladder_->setObjectName("ladderTable");
  ladder_->setHorizontalHeaderLabels(
      {tr("Venue"), tr("Kind"), tr("Availability"), tr("$/h"), tr("Spot $/h"), tr("Quota"), tr("Probed")});
  ladder_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ladder_->setSelectionBehavior(QAbstractItemView::SelectRows);
  ladder_->horizontalHeader()->setStretchLastSection(true);
  connect(ladder_, &QTableWidget::currentCellChanged, this, [this](int r, int, int, int) { showTimeline(r); });
  timeline_ = new QListWidget(page);
  timelineSummary_ = new QLabel(page);
  v->addWidget(ladder_, 2);
  v->addWidget(new QLabel(tr("Timeline"), page));
  v->addWidget(timeline_, 1);
  v->addWidget(timelineSummary_);
  tabs->addTab(page, tr("Ladder"));
}

void VenuesPanel::setProviderSettings(const QString& apiUrl, const QString& team, const QString& apiKeyEnv) {
  apiUrl_->setText(apiUrl);
  team_->setText(team);
  apiKeyEnv_->setText(apiKeyEnv);
}

QString VenuesPanel::statusText() const { return status_->text(); }
QString VenuesPanel::timelineSummary() const { return timelineSummary_->text(); }
void VenuesPanel::setStatus(const QString& text) { status_->setText(text); }

void VenuesPanel::post(std::function<void()> fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); }

void VenuesPanel::appendLog(const QString& box, const QString& text) {
  logs_[box] += text;
  const int row = selectedBoxRow();
  if (row >= 0 && QString::fromStdString(boxes_->row(row).box.name) == box) log_->setPlainText(logs_[box]);
}

int VenuesPanel::selectedBoxRow() const {
  const auto sel = boxesTable_->selectionModel()->selectedRows();
  return sel.isEmpty() ? -1 : sel.first().row();
}

void VenuesPanel::startJob(const QString& label, Work work, Done done) {
  if (job_) return setStatus(tr("Busy: %1").arg(status_->text()));
  auto* job = new Job;
  job_ = job;
  setStatus(label + "…");
  progress_->setVisible(true);
  cancel_->setVisible(true);
  job->thread = QThread::create([job, work] {
    try {
      work(*job);
    } catch (const std::exception& e) {
      job->error = QString::fromStdString(e.what());
    }
  });
  connect(job->thread, &QThread::finished, this, [this, job, done, label] {
    job->thread->deleteLater();
    const QString error = job->error;
    job_ = nullptr;
    delete job;
    progress_->setVisible(false);
    cancel_->setVisible(false);
    setStatus(error.isEmpty() ? label + tr(": done") : error);
    done(error);
    emit jobFinished(error.isEmpty(), error.isEmpty() ? label : error);
  });
  job->thread->start();
}

void VenuesPanel::cancelJob() {
  if (job_) job_->cancel = true;
}

void VenuesPanel::refresh() {
  auto* lab = session_->store();
  if (!lab) {
    boxes_->setRows({});
    ladder_->setRowCount(0);
    total_->setText(tr("Open a lab to record boxes and their cost."));
    return;
  }
  venues::VenueStore store(*lab);
  const double now = nowEpoch();
  std::vector<BoxesModel::Row> rows;
  for (const auto& b : store.boxes()) rows.push_back({b, store.meter(b, now), store.idleSeconds(b, now)});
  boxes_->setRows(std::move(rows));
  const auto venues = store.venues();
  ladder_->setRowCount(static_cast<int>(venues.size()));
  for (int r = 0; r < static_cast<int>(venues.size()); ++r) {
    const auto& v = venues[static_cast<size_t>(r)];
    const QStringList cells = {QString::fromStdString(v.name), QString::fromStdString(v.kind),
                               QString::fromStdString(v.availability),
                               v.pricePerHour ? money(*v.pricePerHour) : QString(),
                               v.spotPricePerHour ? money(*v.spotPricePerHour) : QString(),
                               QString::fromStdString(v.quota), QString::fromStdString(v.probedAt)};
    for (int c = 0; c < cells.size(); ++c) ladder_->setItem(r, c, new QTableWidgetItem(cells[c]));
  }
  tickMeter();
}

void VenuesPanel::tickMeter() {
  auto* lab = session_->store();
  if (!lab || boxes_->rowCount() == 0) {
    total_->setText(tr("No boxes. Rent one from Offers or add one with crosslab-cli box add."));
    return;
  }
  venues::VenueStore store(*lab);
  const double now = nowEpoch();
  std::vector<BoxesModel::Row> rows;
  for (int r = 0; r < boxes_->rowCount(); ++r) {
    const auto& b = boxes_->row(r).box;
    rows.push_back({b, store.meter(b, now), store.idleSeconds(b, now)});
  }
  boxes_->setRows(std::move(rows));
  QString text = tr("Running cost %1 across %2 box(es)").arg(money(boxes_->totalCost())).arg(boxes_->rowCount());
  if (const int idle = boxes_->idleCount()) text += tr(" — %1 idle and still billing").arg(idle);
  total_->setText(text);
}

void VenuesPanel::showTimeline(int ladderRow) {
  timeline_->clear();
  auto* lab = session_->store();
  if (!lab || ladderRow < 0 || !ladder_->item(ladderRow, 0)) return;
  venues::VenueStore store(*lab);
  const auto milestones = store.timeline(ladder_->item(ladderRow, 0)->text().toStdString());
  for (const auto& m : milestones)
    timeline_->addItem(QString::fromStdString(venues::formatUtc(m.at) + "  " + m.name));
  const auto s = venues::summarizeTimeline(milestones);
  timelineSummary_->setText(milestones.size() < 2 ? QString()
                                                  : tr("Elapsed %1, active human time %2")
                                                        .arg(formatDuration(s.elapsedSeconds))
                                                        .arg(formatDuration(s.activeSeconds)));
}

namespace {

// Provider options from the form; the key is read from the named variable, never kept.
// An empty key is looked up in the OS keyring by the worker (withKey), off the GUI thread.
providers::HotAisleOptions providerOptions(const QString& url, const QString& team, const QString& keyVar) {
  providers::HotAisleOptions o;
  o.baseUrl = url;
  o.team = team;
  o.apiKey = qEnvironmentVariable(keyVar.toUtf8().constData());
  return o;
}

// Worker side: the keyring when the environment had no key.
providers::HotAisleOptions withKey(providers::HotAisleOptions o) {
  if (!o.apiKey.isEmpty()) return o;
  const auto r = secrets::readSecret(QStringLiteral("hotaisle-api-key"));
  if (!r.ok)
    throw std::runtime_error("no API key: set HOTAISLE_API_KEY before starting crosslab, or run "
                             "'crosslab-cli secrets set hotaisle-api-key' (" + r.error.toStdString() + ")");
  o.apiKey = r.value;
  return o;
}

}  // namespace

void VenuesPanel::fetchOffers() {
  const providers::HotAisleOptions opt = providerOptions(apiUrl_->text(), team_->text(), apiKeyEnv_->text());
  auto result = std::make_shared<std::vector<providers::Offer>>();
  startJob(tr("Fetching offers"), [opt, result](Job&) { *result = providers::HotAisleClient(withKey(opt)).offers(); },
           [this, result](const QString& error) {
             if (error.isEmpty()) offers_->setOffers(*result);
           });
}

void VenuesPanel::provisionOffer(int viewRow) {
  auto* lab = session_->store();
  if (!lab) return setStatus(tr("Open a lab first: every box life is recorded in it"));
  const int src = offersProxy_->mapToSource(offersProxy_->index(viewRow, 0)).row();
  if (src < 0) return;
  const providers::Offer offer = offers_->offer(src);
  const providers::HotAisleOptions opt = providerOptions(apiUrl_->text(), team_->text(), apiKeyEnv_->text());
  const QString text = tr("Rent %1× %2 at %3/h?\n\nBilling starts now and is at least %4 minute(s) (%5), "
                          "and runs until you tear the box down.")
                           .arg(offer.gpuCount).arg(QString::fromStdString(offer.gpuModel)).arg(money(offer.pricePerHour))
                           .arg(offer.minMinutes).arg(money(offer.pricePerHour * offer.minMinutes / 60.0));
  if (!confirm_(tr("Provision"), text)) return setStatus(tr("Provisioning cancelled"));
  auto vmName = std::make_shared<std::string>();
  const int pollMs = pollMs_;
  startJob(
      tr("Provisioning %1× %2").arg(offer.gpuCount).arg(QString::fromStdString(offer.gpuModel)),
      [this, opt, offer, vmName, pollMs](Job& job) {
        providers::HotAisleClient client(withKey(opt));
        const auto vm = client.provision(offer);
        *vmName = vm.name;
        post([this, vm, offer, team = opt.team.toStdString()] {  // billing from here: record it now
          venues::VenueStore store(*session_->store());
          venues::BoxRow b;
          b.venueId = store.ensureVenue("hotaisle", "cloud", "hotaisle");
          b.name = b.providerVm = vm.name;
          b.host = vm.ipAddress;
          b.user = "hotaisle";
          b.gpuModel = offer.gpuModel;
          b.gpuCount = offer.gpuCount;
          b.pricePerHour = offer.pricePerHour;
          b.minMinutes = offer.minMinutes;
          b.state = "provisioning";
          b.team = team;
          store.addMilestone("hotaisle", "provision request", store::utcNow());
          store.addBox(b);
          appendLog(QString::fromStdString(vm.name), tr("provisioned at %1\n").arg(QString::fromStdString(vm.ipAddress)));
          refresh();
        });
        client.waitRunning(vm.name, pollMs, 900, &job.cancel, [this, name = vm.name](const std::string& s) {
          post([this, name, s] { appendLog(QString::fromStdString(name), QString::fromStdString("state: " + s + "\n")); });
        });
      },
      [this, vmName](const QString& error) {
        auto* lab2 = session_->store();
        if (!lab2 || vmName->empty()) return;
        venues::VenueStore store(*lab2);
        if (auto box = store.activeBox(*vmName); box && error.isEmpty()) store.markReady(box->id, box->host);
        if (!error.isEmpty())
          appendLog(QString::fromStdString(*vmName), tr("%1\nThe VM may still exist and bill: tear it down.\n").arg(error));
        refresh();
      });
}

void VenuesPanel::teardownBox(int row) {
  if (row < 0 || row >= boxes_->rowCount()) return;
  const auto r = boxes_->row(row);
  const QString name = QString::fromStdString(r.box.name);
  const QString text = r.box.providerVm.empty()
                           ? tr("Forget the box %1? Nothing is deleted on the machine.").arg(name)
                           : tr("Tear down %1? The VM is deleted at the provider and its data is lost.\n\n"
                                "This life has cost %2 so far (%3 billed).")
                                 .arg(name).arg(money(r.meter.usd)).arg(formatDuration(r.meter.billedHours * 3600));
  if (!confirm_(tr("Tear down"), text)) return;
  const std::int64_t id = r.box.id;
  auto finish = [this, id, name](const QString& error, const char* state) {
    if (!error.isEmpty() || !session_->store()) return;
    const double usd = venues::VenueStore(*session_->store()).endBox(id, state, nowEpoch());
    appendLog(name, tr("%1; this life cost %2\n").arg(QString::fromLatin1(state)).arg(money(usd)));
    refresh();
  };
  if (r.box.providerVm.empty()) return finish({}, "removed");
  const providers::HotAisleOptions opt = providerOptions(apiUrl_->text(), QString::fromStdString(r.box.team), apiKeyEnv_->text());
  auto gone = std::make_shared<bool>(false);
  startJob(tr("Tearing down %1").arg(name),
           [opt, vm = r.box.providerVm, gone](Job&) { *gone = !providers::HotAisleClient(withKey(opt)).remove(vm); },
           [finish, gone, this, name](const QString& error) {
             if (*gone) appendLog(name, tr("the VM was already gone\n"));
             finish(error, "deleted");
           });
}

void VenuesPanel::runOnBox(int row, const QString& command, bool acceptNewHostKey) {
  runOnBoxWith(row, command, acceptNewHostKey, nullptr);
}

void VenuesPanel::runOnBoxWith(int row, const QString& command, bool acceptNewHostKey,
                               std::shared_ptr<std::string> passphrase) {
  if (row < 0 || row >= boxes_->rowCount() || command.trimmed().isEmpty()) return;
  if (job_) return setStatus(tr("Busy: %1").arg(status_->text()));
  const auto box = boxes_->row(row).box;
  const QString name = QString::fromStdString(box.name);
  if (auto hit = venues::SecretGuard::fromEnvironment().findIn(command.toStdString()))
    return setStatus(tr("Refused: the command contains %1; secrets stay on this machine").arg(QString::fromStdString(*hit)));
  ssh::SshTarget t{box.host, box.port, box.user, box.keyFile, knownHosts_.toStdString(), acceptNewHostKey, 15, {}};
  // An encrypted key: ask here, on the GUI thread, before the worker connects; the worker
  // reads the answer once and it is wiped as soon as the connection is authenticated.
  if (!passphrase && !box.keyFile.empty() && ssh::keyIsEncrypted(box.keyFile)) {
    auto answer = askPassphrase_ ? askPassphrase_(QString::fromStdString(box.keyFile)) : std::nullopt;
    if (!answer) return setStatus(tr("Cancelled: no passphrase for %1").arg(QString::fromStdString(box.keyFile)));
    passphrase = std::make_shared<std::string>(answer->toStdString());
    answer->fill(QChar(u'\0'));
  }
  if (passphrase) t.askPassphrase = [passphrase](const std::string&) { return *passphrase; };
  if (session_->store()) venues::VenueStore(*session_->store()).touchBox(box.id, "exec", command.left(200).toStdString());
  appendLog(name, "$ " + command + "\n");
  auto status = std::make_shared<int>(-1);
  startJob(
      tr("Running on %1").arg(name),
      [this, t, name, command, status, passphrase](Job& job) {
        ssh::SshSession s(t);
        try {
          s.connect();
        } catch (const ssh::HostKeyError&) {
          throw;  // before authentication: the passphrase may serve a retry
        } catch (...) {
          if (passphrase) ssh::wipe(*passphrase);
          throw;
        }
        if (passphrase) ssh::wipe(*passphrase);  // authenticated: not needed again
        auto sink = [this, name](const char* d, std::size_t n) {
          const QString text = QString::fromUtf8(d, static_cast<int>(n));
          post([this, name, text] { appendLog(name, text); });
        };
        *status = s.exec(command.toStdString(), sink, sink, &job.cancel);
      },
      [this, row, name, command, status, acceptNewHostKey, passphrase](const QString& error) {
        if (error.isEmpty()) return appendLog(name, tr("[exit %1]\n").arg(*status));
        appendLog(name, error + "\n");
        // Unknown host: ask. The host key is checked before the key is opened, so the
        // passphrase asked already serves the retry. A changed key is never offered.
        if (!acceptNewHostKey && error.contains("unknown host key") && confirm_(tr("Unknown host key"), error))
          return runOnBoxWith(row, command, true, passphrase);
        if (passphrase) ssh::wipe(*passphrase);
      });
}

}  // namespace crosslab::widgets
