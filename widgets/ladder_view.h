#pragma once
// The Venues panel's Ladder tab: the availability ladder (one rung per venue: what it
// offered, at what price, when it was probed), the probes of the selected venue (every
// offers fetch), and its timeline (account created … first token, each box life's
// milestones), with milestones entered by hand or imported from a file.

#include <QWidget>
#include <functional>

class QLabel;
class QListWidget;
class QTableWidget;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class LadderView : public QWidget {
  Q_OBJECT
 public:
  // Picks a file to read (default: a Qt file dialog); empty = cancelled.
  using FileChooser = std::function<QString(const QString& title)>;

  explicit LadderView(backends::LabSession* session, QWidget* parent = nullptr);
  void setFileChooser(FileChooser chooser) { chooseFile_ = std::move(chooser); }

  QTableWidget* ladderTable() const { return ladder_; }
  QString timelineSummary() const;
  QString selectedVenue() const;

 public slots:
  void refresh();
  void addMilestone();
  void importTimeline();

 signals:
  void status(const QString& text);

 private:
  void showVenue(int row);
  backends::LabSession* session_;
  FileChooser chooseFile_;
  QTableWidget* ladder_;
  QListWidget* probes_;
  QListWidget* timeline_;
  QLabel* summary_;
};

}  // namespace crosslab::widgets
