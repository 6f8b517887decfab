#include "widgets/empty_state_panel.h"

#include <QLabel>
#include <QVBoxLayout>

#include "backends/lab_session.h"

namespace crosslab::widgets {

EmptyStatePanel::EmptyStatePanel(PanelSpec spec, backends::LabSession* session, QWidget* parent)
    : QWidget(parent), spec_(std::move(spec)), session_(session) {
  setObjectName("panel_" + spec_.title.toLower());
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(48, 40, 48, 40);
  layout->setSpacing(14);

  auto* title = new QLabel(spec_.title, this);
  QFont f = title->font();
  f.setPointSizeF(f.pointSizeF() * 1.8);
  f.setBold(true);
  title->setFont(f);

  auto* purpose = new QLabel(spec_.purpose, this);
  purpose->setWordWrap(true);

  summary_ = new QLabel(this);
  summary_->setObjectName("summary");
  summary_->setWordWrap(true);

  auto* produced = new QLabel(spec_.producedBy, this);
  produced->setObjectName("producedBy");
  produced->setWordWrap(true);
  produced->setTextFormat(Qt::RichText);
  produced->setTextInteractionFlags(Qt::TextSelectableByMouse);

  layout->addWidget(title);
  layout->addWidget(purpose);
  layout->addSpacing(8);
  layout->addWidget(summary_);
  layout->addWidget(produced);
  layout->addStretch(1);

  connect(session_, &backends::LabSession::labChanged, this, &EmptyStatePanel::refresh);
  connect(session_, &backends::LabSession::labDataChanged, this, &EmptyStatePanel::refresh);
  refresh();
}

QString EmptyStatePanel::labSummary() const {
  if (!session_->isOpen()) return tr("No lab is open.");
  QStringList parts;
  for (const auto& t : spec_.tables) parts << tr("%1 %2").arg(session_->count(t)).arg(t.toLower().replace('_', ' '));
  return tr("This lab holds: %1.").arg(parts.join(", "));
}

void EmptyStatePanel::refresh() { summary_->setText(labSummary()); }

}  // namespace crosslab::widgets
