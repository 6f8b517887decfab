#pragma once
// The Venues panel's small dialogs and the texts of its questions: Add box (a machine
// reachable by SSH), Add milestone (a timeline entry the provider does not expose), the
// host-key question, the rent confirmation and the close-with-billing-boxes question.

#include <QDialog>
#include <QSet>
#include <QString>

#include "core/venues/venue_store.h"

class QComboBox;
class QDateTimeEdit;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace crosslab::providers {
struct Offer;
}

namespace crosslab::widgets {

class AddBoxDialog : public QDialog {
  Q_OBJECT
 public:
  // `takenNames`: names of active boxes (a second life needs the first one ended).
  AddBoxDialog(QSet<QString> takenNames, QWidget* parent = nullptr);
  // The box as entered (venue, state and times are the caller's).
  venues::BoxRow box() const;

 private:
  void validate();
  QSet<QString> taken_;
  QLineEdit* name_;
  QLineEdit* host_;
  QSpinBox* port_;
  QLineEdit* user_;
  QLineEdit* key_;
  QDoubleSpinBox* price_;
  QLabel* problem_;
  QPushButton* ok_;
};

class MilestoneDialog : public QDialog {
  Q_OBJECT
 public:
  MilestoneDialog(const QStringList& venues, const QString& venue, QWidget* parent = nullptr);
  QString venue() const;
  venues::Milestone milestone() const;  // source "entered"

 private:
  void validate();
  QComboBox* venue_;
  QComboBox* name_;
  QDateTimeEdit* at_;
  QLineEdit* note_;
  QPushButton* ok_;
};

// "Rent 1× MI300X at $2.99/h? …" with the minimum billing spelled out.
QString rentQuestion(const providers::Offer& offer);
// An unknown host: who, the fingerprint, what Yes does and what No does.
QString hostKeyQuestion(const QString& where, const QString& fingerprint, const QString& knownHostsFile);
// Boxes that bill while the window closes: names, cost so far, what each button does.
QString billingQuestion(const QString& action, const std::vector<venues::BoxRow>& boxes,
                        const std::vector<double>& costs);

}  // namespace crosslab::widgets
