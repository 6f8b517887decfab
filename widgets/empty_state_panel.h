#pragma once
// A panel that a later capability fills. It says honestly what it will hold, what the
// open lab holds for it today, and which command produces that data.

#include <QStringList>
#include <QWidget>

class QLabel;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

struct PanelSpec {
  QString title;         // "Training"
  QString purpose;       // what the panel will hold
  QStringList tables;    // lab tables whose rows it shows
  QString producedBy;    // the command that writes its data, and whether it exists yet
};

class EmptyStatePanel : public QWidget {
  Q_OBJECT
 public:
  EmptyStatePanel(PanelSpec spec, backends::LabSession* session, QWidget* parent = nullptr);

  const PanelSpec& spec() const { return spec_; }
  QString labSummary() const;

 public slots:
  void refresh();

 private:
  PanelSpec spec_;
  backends::LabSession* session_;
  QLabel* summary_;
};

}  // namespace crosslab::widgets
