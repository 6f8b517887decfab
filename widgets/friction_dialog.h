#pragma once
// Add or edit one friction entry: time, title, category, minutes and money lost, the box
// or run, the cause, the fix, and whether it was specific to the venue's ecosystem. OK
// goes through FrictionLog's request… methods: a refused entry keeps the dialog open with
// the reason and changes nothing.

#include <QDialog>

#include "core/ledger/friction_log.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace crosslab::store {
class LabStore;
}

namespace crosslab::widgets {

class FrictionDialog : public QDialog {
  Q_OBJECT
 public:
  // `entry.id` 0: a new entry (pre-filled from `entry`); otherwise an edit of that entry.
  FrictionDialog(store::LabStore& lab, const ledger::FrictionEntry& entry, QWidget* parent = nullptr);

  std::int64_t savedId() const { return savedId_; }
  void accept() override;

 private:
  ledger::FrictionEntry current() const;

  store::LabStore& lab_;
  ledger::FrictionEntry original_;
  std::int64_t savedId_ = 0;
  QLineEdit* at_;
  QLineEdit* title_;
  QComboBox* category_;
  QDoubleSpinBox* minutes_;
  QDoubleSpinBox* usd_;
  QComboBox* box_;
  QComboBox* run_;
  QPlainTextEdit* cause_;
  QLineEdit* fix_;
  QCheckBox* ecosystem_;
  QLabel* error_;
};

}  // namespace crosslab::widgets
