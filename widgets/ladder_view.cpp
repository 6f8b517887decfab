#include "widgets/ladder_view.h"

#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <map>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/venues/timeline_file.h"
#include "core/util/lab_files.h"
#include "core/venues/venue_store.h"
#include "widgets/boxes_model.h"
#include "widgets/venue_dialogs.h"
#include "widgets/file_dialogs.h"

namespace crosslab::widgets {
namespace {

QString money(double usd) { return QString("$%1").arg(usd, 0, 'f', 2); }

enum Column { Venue, Kind, Accelerators, Availability, Price, Spot, Quota, Probed, Notes, ColumnCount };

}  // namespace

LadderView::LadderView(backends::LabSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  chooseFile_ = [this](const QString& title) {
    return FileDialog::openFile(this, title, QString(), tr("Timelines (*.jsonl *.json *.csv *.txt);;All files (*)"));
  };
  auto* v = new QVBoxLayout(this);
  ladder_ = new QTableWidget(0, ColumnCount, this);
  ladder_->setObjectName("ladderTable");
  ladder_->setHorizontalHeaderLabels({tr("Venue"), tr("Kind"), tr("Accelerators"), tr("Availability"), tr("$/h"),
                                      tr("Spot $/h"), tr("Quota"), tr("Probed"), tr("Notes")});
  ladder_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ladder_->setSelectionBehavior(QAbstractItemView::SelectRows);
  ladder_->setSelectionMode(QAbstractItemView::SingleSelection);
  ladder_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  ladder_->horizontalHeader()->setSectionResizeMode(Notes, QHeaderView::Stretch);
  ladder_->verticalHeader()->setVisible(false);
  connect(ladder_, &QTableWidget::currentCellChanged, this, [this](int r, int, int, int) { showVenue(r); });
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* left = new QWidget(split);
  auto* lv = new QVBoxLayout(left);
  lv->setContentsMargins(0, 0, 0, 0);
  lv->addWidget(new QLabel(tr("Probes (each offers fetch)"), left));
  probes_ = new QListWidget(left);
  probes_->setObjectName("probeList");
  lv->addWidget(probes_);
  auto* right = new QWidget(split);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(0, 0, 0, 0);
  rv->addWidget(new QLabel(tr("Timeline"), right));
  timeline_ = new QListWidget(right);
  timeline_->setObjectName("timelineList");
  rv->addWidget(timeline_);
  summary_ = new QLabel(right);
  summary_->setObjectName("timelineSummary");
  summary_->setWordWrap(true);
  rv->addWidget(summary_);
  auto* buttons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add milestone…"), right);
  add->setObjectName("addMilestoneButton");
  add->setToolTip(tr("Record what the provider does not show: account created, key minted, …"));
  auto* import = new QPushButton(tr("Import timeline…"), right);
  import->setObjectName("importTimelineButton");
  import->setToolTip(tr("JSON Lines {\"milestone\", \"at\"}, the JSON of 'venues timeline --json', or 'TIME NAME' lines"));
  connect(add, &QPushButton::clicked, this, &LadderView::addMilestone);
  connect(import, &QPushButton::clicked, this, &LadderView::importTimeline);
  buttons->addStretch();
  buttons->addWidget(add);
  buttons->addWidget(import);
  rv->addLayout(buttons);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  v->addWidget(ladder_, 3);
  v->addWidget(split, 2);
}

QString LadderView::timelineSummary() const { return summary_->text(); }

QString LadderView::selectedVenue() const {
  const int r = ladder_->currentRow();
  return r >= 0 && ladder_->item(r, Venue) ? ladder_->item(r, Venue)->text() : QString();
}

void LadderView::refresh() {
  auto* lab = session_->store();
  const QString keep = selectedVenue();
  if (!lab) {
    ladder_->setRowCount(0);
    showVenue(-1);
    return;
  }
  venues::VenueStore store(*lab);
  const auto venues = store.venues();
  QSignalBlocker block(ladder_);
  ladder_->setRowCount(static_cast<int>(venues.size()));
  int select = venues.empty() ? -1 : 0;
  for (int r = 0; r < static_cast<int>(venues.size()); ++r) {
    const auto& v = venues[static_cast<size_t>(r)];
    const QStringList cells = {QString::fromStdString(v.name),
                               QString::fromStdString(v.kind),
                               QString::fromStdString(v.accelerator),
                               QString::fromStdString(v.availability),
                               v.pricePerHour ? money(*v.pricePerHour) : QString(),
                               v.spotPricePerHour ? money(*v.spotPricePerHour) : QString(),
                               QString::fromStdString(v.quota),
                               QString::fromStdString(v.probedAt),
                               QString::fromStdString(v.notes)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(cells[c]);
      ladder_->setItem(r, c, item);
    }
    if (cells[Venue] == keep) select = r;
  }
  ladder_->setCurrentCell(select, 0);
  showVenue(select);
}

void LadderView::showVenue(int row) {
  probes_->clear();
  timeline_->clear();
  summary_->clear();
  auto* lab = session_->store();
  if (!lab || row < 0 || !ladder_->item(row, Venue)) return;
  venues::VenueStore store(*lab);
  const std::string venue = ladder_->item(row, Venue)->text().toStdString();
  for (const auto& p : store.probes(venue))
    probes_->addItem(QString::fromStdString(p.at + "  " + p.availability) +
                     (p.pricePerHour ? tr("  from %1/h").arg(money(*p.pricePerHour)) : QString()) +
                     (p.note.empty() ? QString() : QString::fromStdString("  — " + p.note)));
  std::map<std::int64_t, std::string> lifeNames;
  for (const auto& b : store.boxes(true)) lifeNames[b.id] = b.name;
  const auto milestones = store.timeline(venue);
  for (const auto& m : milestones) {
    QString line = QString::fromStdString(venues::formatUtc(m.at) + "  " + m.name);
    if (m.boxId > 0 && lifeNames.count(m.boxId)) line += QString::fromStdString("  [" + lifeNames[m.boxId] + "]");
    if (m.source != "crosslab") line += tr("  (%1)").arg(QString::fromStdString(m.source));
    if (!m.note.empty() && m.note != lifeNames[m.boxId]) line += QString::fromStdString("  — " + m.note);
    timeline_->addItem(line);
  }
  const auto s = venues::summarizeTimeline(milestones);
  if (s.milestones >= 2)
    summary_->setText(tr("Account to silicon: elapsed %1, active human time %2 (gaps over 30 min count as calendar "
                         "time, not work)")
                          .arg(formatDuration(s.elapsedSeconds), formatDuration(s.activeSeconds)));
}

void LadderView::addMilestone() {
  auto* lab = session_->store();
  if (!lab) return emit status(tr("Open a lab first"));
  QStringList names;
  for (const auto& v : venues::VenueStore(*lab).venues()) names << QString::fromStdString(v.name);
  const QString venue = selectedVenue().isEmpty() ? QStringLiteral("hotaisle") : selectedVenue();
  MilestoneDialog dialog(names, venue, this);
  if (dialog.exec() != QDialog::Accepted) return;
  const auto m = dialog.milestone();
  try {
    venues::VenueStore(*lab).addMilestone(dialog.venue().toStdString(), m.name, venues::formatUtc(m.at), m.note, 0,
                                          m.source);
  } catch (const std::exception& e) {
    return emit status(tr("Milestone not recorded: %1").arg(QString::fromStdString(e.what())));
  }
  refresh();
  emit status(tr("Recorded '%1' for %2").arg(QString::fromStdString(m.name), dialog.venue()));
}

void LadderView::importTimeline() {
  auto* lab = session_->store();
  if (!lab) return emit status(tr("Open a lab first"));
  const QString venue = selectedVenue().isEmpty() ? QStringLiteral("hotaisle") : selectedVenue();
  const QString file = chooseFile_(tr("Import a timeline for %1").arg(venue));
  if (file.isEmpty()) return;
  if (util::isLabDatabaseFile(file.toStdString()))
    return emit status(tr("Nothing imported: %1")
                           .arg(QString::fromStdString(util::labDatabaseRefusal(file.toStdString(), "timeline import"))));
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return emit status(tr("Cannot read %1: %2").arg(file, f.errorString()));
  try {
    const auto milestones = venues::parseTimelineFile(f.readAll().toStdString());
    venues::VenueStore(*lab).addMilestones(venue.toStdString(), milestones);
    refresh();
    emit status(tr("Imported %n milestone(s) into the timeline of %1", nullptr, static_cast<int>(milestones.size()))
                    .arg(venue));
  } catch (const std::exception& e) {
    emit status(tr("Nothing imported from %1: %2").arg(file, QString::fromStdString(e.what())));
  }
}

}  // namespace crosslab::widgets
