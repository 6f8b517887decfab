#include "widgets/ledger_panel.h"

#include <QDesktopServices>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QUrl>
#include <QVBoxLayout>

#include "backends/lab_session.h"
#include "backends/secrets/keyring.h"
#include "core/ledger/friction_log.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/ledger_text.h"
#include "core/ledger/life_recorder.h"
#include "core/report/report_builder.h"
#include "core/store/lab_store.h"
#include "widgets/friction_dialog.h"
#include "widgets/life_bars_chart.h"

namespace crosslab::widgets {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QTableView* tableFor(QStandardItemModel* model, const QString& name, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setObjectName(name);
  view->setModel(model);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setSelectionMode(QAbstractItemView::SingleSelection);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setStretchLastSection(true);
  view->setWordWrap(false);
  return view;
}

QList<QStandardItem*> row(const QStringList& cells) {
  QList<QStandardItem*> items;
  for (const auto& c : cells) items << new QStandardItem(c);
  return items;
}

QString money(double usd) { return q(ledger::formatUsd(usd)); }
QString minutes(double m) { return q(ledger::formatMinutes(m)); }

}  // namespace

LedgerPanel::LedgerPanel(backends::LabSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  setObjectName("panel_ledger");
  totals_ = new QLabel(this);
  totals_->setObjectName("ledgerTotals");
  totals_->setWordWrap(true);
  totals_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  export_ = new QPushButton(tr("Export report…"), this);
  export_->setObjectName("exportReport");
  export_->setToolTip(tr("Write report.md and report.html into the lab's reports/ folder and open the HTML"));
  progress_ = new QProgressBar(this);
  progress_->setObjectName("reportProgress");
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(120);
  progress_->hide();
  auto* header = new QHBoxLayout;
  header->addWidget(totals_, 1);
  header->addWidget(progress_);
  header->addWidget(export_);

  chart_ = new LifeBarsChart(this);
  lives_ = new QStandardItemModel(this);
  transfers_ = new QStandardItemModel(this);
  spend_ = new QStandardItemModel(this);
  friction_ = new QStandardItemModel(this);
  livesView_ = tableFor(lives_, "livesTable", this);
  forecast_ = new QLabel(this);
  forecast_->setObjectName("stagingForecast");
  forecast_->setWordWrap(true);

  auto* livesPage = new QWidget(this);
  auto* livesLayout = new QVBoxLayout(livesPage);
  auto* split = new QSplitter(Qt::Vertical, livesPage);
  split->addWidget(chart_);
  split->addWidget(livesView_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  livesLayout->addWidget(split, 1);
  livesLayout->addWidget(forecast_);

  auto* frictionPage = new QWidget(this);
  auto* frictionLayout = new QVBoxLayout(frictionPage);
  frictionView_ = tableFor(friction_, "frictionTable", frictionPage);
  auto* add = new QPushButton(tr("Add…"), frictionPage);
  add->setObjectName("frictionAdd");
  auto* edit = new QPushButton(tr("Edit…"), frictionPage);
  edit->setObjectName("frictionEdit");
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(add);
  buttons->addWidget(edit);
  buttons->addStretch(1);
  offers_ = new QListWidget(frictionPage);
  offers_->setObjectName("frictionOffers");
  offers_->setMaximumHeight(110);
  auto* logOffer = new QPushButton(tr("Log…"), frictionPage);
  logOffer->setObjectName("frictionLogOffer");
  logOffer->setToolTip(tr("Log the selected offer, pre-filled with its reason, dead minutes and their cost"));
  auto* offersRow = new QHBoxLayout;
  offersRow->addWidget(offers_, 1);
  offersRow->addWidget(logOffer, 0, Qt::AlignTop);
  frictionLayout->addWidget(frictionView_, 1);
  frictionLayout->addLayout(buttons);
  auto* offersLabel = new QLabel(tr("Not logged yet (failed or stalled runs, lives that ended with debug time):"),
                                 frictionPage);
  offersLabel->setWordWrap(true);
  frictionLayout->addWidget(offersLabel);
  frictionLayout->addLayout(offersRow);

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("ledgerTabs");
  tabs_->addTab(livesPage, tr("Lives"));
  tabs_->addTab(tableFor(transfers_, "transfersTable", this), tr("Transfers"));
  tabs_->addTab(tableFor(spend_, "spendTable", this), tr("Other spend && credits"));
  tabs_->addTab(frictionPage, tr("Friction"));

  status_ = new QLabel(this);
  status_->setObjectName("ledgerStatus");
  status_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(header);
  layout->addWidget(tabs_, 1);
  layout->addWidget(status_);

  connect(add, &QPushButton::clicked, this, &LedgerPanel::addFriction);
  connect(edit, &QPushButton::clicked, this, &LedgerPanel::editFriction);
  connect(frictionView_, &QTableView::doubleClicked, this, &LedgerPanel::editFriction);
  connect(logOffer, &QPushButton::clicked, this, &LedgerPanel::logSelectedOffer);
  connect(offers_, &QListWidget::itemDoubleClicked, this, &LedgerPanel::logSelectedOffer);
  connect(export_, &QPushButton::clicked, this, &LedgerPanel::exportReport);
  connect(session_, &backends::LabSession::labChanged, this, &LedgerPanel::reload);
  reload();
}

LedgerPanel::~LedgerPanel() {
  if (worker_) worker_->wait();
}

void LedgerPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  reload();
}

void LedgerPanel::reload() {
  lives_->clear();
  transfers_->clear();
  spend_->clear();
  friction_->clear();
  offers_->clear();
  lives_->setHorizontalHeaderLabels({tr("Life"), tr("Provider / GPU"), tr("Provisioned (UTC)"), tr("Billed"),
                                     tr("Cost"), tr("Compute"), tr("Staging"), tr("Debug"), tr("Idle"),
                                     tr("Ratio")});
  transfers_->setHorizontalHeaderLabels({tr("Life"), tr("Direction"), tr("What"), tr("Bytes"), tr("Took"), tr("Rate")});
  spend_->setHorizontalHeaderLabels({tr("At (UTC)"), tr("Kind"), tr("USD"), tr("Note")});
  friction_->setHorizontalHeaderLabels({tr("At (UTC)"), tr("What"), tr("Category"), tr("Minutes"), tr("Money"),
                                        tr("Box / run"), tr("Fix"), tr("Ecosystem")});
  export_->setEnabled(session_->isOpen() && !exporting_);
  auto* lab = session_->store();
  if (!lab) {
    chart_->setLives({});
    totals_->setText(tr("No lab open."));
    forecast_->clear();
    return;
  }
  ledger::LabLedger l;
  std::vector<ledger::FrictionEntry> entries, offers;
  try {
    l = ledger::readLedger(*lab, ledger::epochNow());
    ledger::FrictionLog log(*lab);
    entries = log.list();
    offers = log.openSuggestions();
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot read the ledger: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  chart_->setLives(l.lives);
  QMap<QString, int> lifeNo;
  QStringList forecasts;
  for (const auto& r : l.lives) {
    const auto& m = r.ledger.minutes;
    const auto& u = r.ledger.usd;
    const QString box = q(r.life.box);
    const QString name = QString("%1 #%2%3").arg(box).arg(++lifeNo[box]).arg(r.life.alive() ? tr(" (alive)") : "");
    const QString hw = QString("%1, %2%3").arg(q(r.life.provider), r.life.gpus > 1 ? QString("%1x ").arg(r.life.gpus) : "",
                                              q(r.life.gpu));
    auto items = row({name, hw, q(ledger::isoUtc(r.life.provisioned)), minutes(m.billed), money(u.billed),
                      money(u.compute), money(u.staging), money(u.debug), money(u.idle),
                      q(ledger::formatRatio(r.ledger.ratio))});
    items[0]->setData(QVariant::fromValue<qlonglong>(r.life.boxId), Qt::UserRole);
    items[4]->setToolTip(tr("%1 billed (%2 used), %3/h, %4 min minimum")
                             .arg(minutes(m.billed), minutes(m.used), money(r.life.pricePerHour))
                             .arg(r.life.minMinutes));
    lives_->appendRow(items);
    for (const auto& t : r.life.transfers)
      transfers_->appendRow(row({name, q(std::string(ledger::toString(t.direction))), q(t.what),
                                 q(ledger::formatBytes(t.bytes)), minutes((t.end - t.start) / 60.0),
                                 q(ledger::formatRate(t.mbPerSecond()))}));
    if (r.life.alive())
      if (auto f = ledger::stagingForecastFor(*lab, r.life.venue, r.life.pricePerHour); f && f->bytes > 0)
        forecasts << tr("%1: the last life of %2 moved %3 in %4; expect about %5 of staging again.")
                         .arg(name, q(r.life.venue), q(ledger::formatBytes(f->bytes)), minutes(f->minutes),
                              money(f->usd));
  }
  const auto& t = l.totals;
  auto total = row({tr("Total"), "", "", minutes(t.minutes.billed), money(t.usd.billed), money(t.usd.compute),
                    money(t.usd.staging), money(t.usd.debug), money(t.usd.idle), q(ledger::formatRatio(t.ratio))});
  for (auto* item : total) {
    QFont f = item->font();
    f.setBold(true);
    item->setFont(f);
  }
  lives_->appendRow(total);
  for (const auto& s : l.other)
    spend_->appendRow(row({q(s.at), s.category == "api" ? tr("API spend") : tr("other spend"), money(s.usd), q(s.note)}));
  for (const auto& c : l.credits) spend_->appendRow(row({q(c.at), tr("credit"), money(c.usd), q(c.note)}));
  totals_->setText(tr("<b>GPU rental %1</b> over %2 lives — compute %3, staging %4, debug %5, idle %6; ratio %7. "
                      "Other spend %8, credits %9.")
                       .arg(money(t.usd.billed))
                       .arg(l.lives.size())
                       .arg(money(t.usd.compute), money(t.usd.staging), money(t.usd.debug), money(t.usd.idle),
                            q(ledger::formatRatio(t.ratio)), money(t.otherUsd), money(t.creditUsd)));
  forecast_->setText(forecasts.join("\n"));
  forecast_->setVisible(!forecasts.isEmpty());
  for (const auto& e : entries) {
    QString where = q(e.box);
    if (!e.run.empty()) where += (where.isEmpty() ? "" : " / ") + q(e.run);
    auto items = row({q(e.at), q(e.title) + (e.cause.empty() ? "" : " — " + q(e.cause)),
                      q(std::string(ledger::toLabel(e.category))), e.minutes ? minutes(*e.minutes) : "",
                      e.usd ? money(*e.usd) : "", where, q(e.fix), e.ecosystemSpecific ? tr("yes") : tr("no")});
    items[0]->setData(QVariant::fromValue<qlonglong>(e.id), Qt::UserRole);
    friction_->appendRow(items);
  }
  for (const auto& o : offers) {
    auto* item = new QListWidgetItem(
        QString("%1 — %2%3").arg(q(o.title), o.minutes ? minutes(*o.minutes) : tr("? min"),
                                 o.usd ? ", " + money(*o.usd) : QString()),
        offers_);
    item->setData(Qt::UserRole, o.runId ? QVariant::fromValue<qlonglong>(*o.runId) : QVariant());
    item->setData(Qt::UserRole + 1, !o.runId && o.boxId ? QVariant::fromValue<qlonglong>(*o.boxId) : QVariant());
    item->setToolTip(q(o.cause));
  }
  livesView_->resizeColumnsToContents();
  frictionView_->resizeColumnsToContents();
}

void LedgerPanel::addFriction() {
  auto* lab = session_->store();
  if (!lab) return status_->setText(tr("Open a lab first."));
  FrictionDialog dialog(*lab, {}, this);
  if (dialog.exec() == QDialog::Accepted) {
    status_->setText(tr("Friction entry %1 added.").arg(dialog.savedId()));
    reload();
  }
}

void LedgerPanel::editFriction() {
  auto* lab = session_->store();
  if (!lab) return status_->setText(tr("Open a lab first."));
  const auto sel = frictionView_->selectionModel()->selectedRows();
  if (sel.isEmpty()) return status_->setText(tr("Select a friction entry to edit."));
  const auto id = friction_->item(sel.first().row(), 0)->data(Qt::UserRole).toLongLong();
  const auto entry = ledger::FrictionLog(*lab).find(id);
  if (!entry) return reload();
  FrictionDialog dialog(*lab, *entry, this);
  if (dialog.exec() == QDialog::Accepted) {
    status_->setText(tr("Friction entry %1 saved.").arg(id));
    reload();
  }
}

void LedgerPanel::logSelectedOffer() {
  auto* lab = session_->store();
  if (!lab) return status_->setText(tr("Open a lab first."));
  auto* item = offers_->currentItem();
  if (!item) return status_->setText(tr("Select an offer to log."));
  ledger::FrictionLog log(*lab);
  std::optional<ledger::FrictionEntry> offer;
  if (item->data(Qt::UserRole).isValid()) offer = log.suggestFromRun(item->data(Qt::UserRole).toLongLong());
  else if (item->data(Qt::UserRole + 1).isValid())
    offer = log.suggestFromBoxLife(item->data(Qt::UserRole + 1).toLongLong());
  if (!offer) return reload();
  FrictionDialog dialog(*lab, *offer, this);
  if (dialog.exec() == QDialog::Accepted) {
    status_->setText(tr("Friction entry %1 logged.").arg(dialog.savedId()));
    reload();
  }
}

void LedgerPanel::exportReport() {
  if (!session_->isOpen() || exporting_) return;
  exporting_ = true;
  export_->setEnabled(false);
  progress_->show();
  status_->setText(tr("Writing the report…"));
  const std::string labDir = session_->path().toStdString();
  // Its own connection on its own thread: reading every table and hashing weights must
  // not hold up the window.
  worker_ = QThread::create([this, labDir] {
    QString html, error;
    try {
      auto lab = store::LabStore::open(labDir);
      const auto files = report::writeReport(lab, std::filesystem::path(labDir) / "reports",
                                             {report::Format::Markdown, report::Format::Html},
                                             secrets::outgoingGuard(), report::ReportOptions{});
      for (const auto& f : files)
        if (f.filename() == "report.html") html = QString::fromStdString(f.string());
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    QMetaObject::invokeMethod(this, [this, html, error] { onReportDone(html, error); }, Qt::QueuedConnection);
  });
  connect(worker_, &QThread::finished, worker_, &QObject::deleteLater);
  worker_->start();
}

void LedgerPanel::onReportDone(const QString& html, const QString& error) {
  exporting_ = false;
  progress_->hide();
  export_->setEnabled(session_->isOpen());
  if (!error.isEmpty()) {
    status_->setText(tr("The report was not written: %1").arg(error));
  } else {
    status_->setText(tr("Report written to %1").arg(QDir::toNativeSeparators(html)));
    QDesktopServices::openUrl(QUrl::fromLocalFile(html));
  }
  emit reportExported(html, error);
}

}  // namespace crosslab::widgets
