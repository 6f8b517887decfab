#include "widgets/friction_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"

namespace crosslab::widgets {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// "—" (nothing) then every row of `sql` (id, label), newest first.
void fillChoices(QComboBox* combo, store::LabStore& lab, const char* sql, std::optional<std::int64_t> selected) {
  combo->addItem(QObject::tr("—"), QVariant());
  auto st = lab.db().prepare(sql);
  while (st.step()) {
    combo->addItem(q(st.text(1)), QVariant::fromValue<qlonglong>(st.int64(0)));
    if (selected && *selected == st.int64(0)) combo->setCurrentIndex(combo->count() - 1);
  }
}

}  // namespace

FrictionDialog::FrictionDialog(store::LabStore& lab, const ledger::FrictionEntry& entry, QWidget* parent)
    : QDialog(parent), lab_(lab), original_(entry) {
  setObjectName("frictionDialog");
  setWindowTitle(entry.id ? tr("Edit friction entry") : tr("Log friction"));
  auto* form = new QFormLayout;
  at_ = new QLineEdit(q(entry.at.empty() ? ledger::isoUtc(ledger::epochNow()) : entry.at), this);
  at_->setObjectName("frictionAt");
  at_->setToolTip(tr("When it happened, ISO-8601 UTC (2026-01-04T22:50:00Z)"));
  title_ = new QLineEdit(q(entry.title), this);
  title_->setObjectName("frictionTitle");
  title_->setPlaceholderText(tr("What went wrong, in one line"));
  category_ = new QComboBox(this);
  category_->setObjectName("frictionCategory");
  for (const auto c : ledger::allFrictionCategories()) {
    category_->addItem(q(std::string(ledger::toLabel(c))), q(std::string(ledger::toKey(c))));
    if (c == entry.category) category_->setCurrentIndex(category_->count() - 1);
  }
  minutes_ = new QDoubleSpinBox(this);
  minutes_->setObjectName("frictionMinutes");
  minutes_->setRange(0, 1e6);
  minutes_->setDecimals(1);
  minutes_->setSuffix(tr(" min"));
  minutes_->setValue(entry.minutes.value_or(0));
  usd_ = new QDoubleSpinBox(this);
  usd_->setObjectName("frictionUsd");
  usd_->setRange(0, 1e6);
  usd_->setDecimals(2);
  usd_->setPrefix("$");
  usd_->setValue(entry.usd.value_or(0));
  box_ = new QComboBox(this);
  box_->setObjectName("frictionBox");
  fillChoices(box_, lab, "SELECT id, name || ' (' || IFNULL(provisioned_at, '') || ')' FROM boxes ORDER BY id DESC",
              entry.boxId);
  run_ = new QComboBox(this);
  run_->setObjectName("frictionRun");
  fillChoices(run_, lab, "SELECT id, name || ' (' || status || ')' FROM runs ORDER BY id DESC", entry.runId);
  cause_ = new QPlainTextEdit(q(entry.cause), this);
  cause_->setObjectName("frictionCause");
  cause_->setMaximumHeight(70);
  fix_ = new QLineEdit(q(entry.fix), this);
  fix_->setObjectName("frictionFix");
  ecosystem_ = new QCheckBox(tr("Specific to the venue's ecosystem (ROCm, CUDA, MLX …)"), this);
  ecosystem_->setObjectName("frictionEcosystem");
  ecosystem_->setChecked(entry.ecosystemSpecific);
  form->addRow(tr("When"), at_);
  form->addRow(tr("What"), title_);
  form->addRow(tr("Category"), category_);
  form->addRow(tr("Minutes lost"), minutes_);
  form->addRow(tr("Money lost"), usd_);
  form->addRow(tr("Box"), box_);
  form->addRow(tr("Run"), run_);
  form->addRow(tr("Cause"), cause_);
  form->addRow(tr("Fix"), fix_);
  form->addRow(QString(), ecosystem_);
  error_ = new QLabel(this);
  error_->setObjectName("frictionError");
  error_->setStyleSheet("color: #c0392b");
  error_->setWordWrap(true);
  error_->hide();
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setObjectName("frictionOk");
  buttons->button(QDialogButtonBox::Cancel)->setObjectName("frictionCancel");
  connect(buttons, &QDialogButtonBox::accepted, this, &FrictionDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &FrictionDialog::reject);
  auto* layout = new QVBoxLayout(this);
  if (!entry.origin.empty() && !entry.id) {
    auto* origin = new QLabel(tr("Pre-filled from %1: check the figures, pick a category.").arg(q(entry.origin)), this);
    origin->setObjectName("frictionOrigin");
    origin->setWordWrap(true);
    layout->addWidget(origin);
  }
  layout->addLayout(form);
  layout->addWidget(error_);
  layout->addWidget(buttons);
  resize(560, sizeHint().height());
}

ledger::FrictionEntry FrictionDialog::current() const {
  ledger::FrictionEntry e = original_;
  e.at = at_->text().trimmed().toStdString();
  e.title = title_->text().trimmed().toStdString();
  e.category = ledger::frictionCategoryFrom(category_->currentData().toString().toStdString())
                   .value_or(ledger::FrictionCategory::Other);
  e.minutes = minutes_->value() > 0 ? std::optional<double>(minutes_->value()) : std::nullopt;
  e.usd = usd_->value() > 0 ? std::optional<double>(usd_->value()) : std::nullopt;
  e.boxId = box_->currentData().isValid() ? std::optional<std::int64_t>(box_->currentData().toLongLong()) : std::nullopt;
  e.runId = run_->currentData().isValid() ? std::optional<std::int64_t>(run_->currentData().toLongLong()) : std::nullopt;
  e.cause = cause_->toPlainText().trimmed().toStdString();
  e.fix = fix_->text().trimmed().toStdString();
  e.ecosystemSpecific = ecosystem_->isChecked();
  return e;
}

void FrictionDialog::accept() {
  const auto e = current();
  try {
    ledger::FrictionLog log(lab_);
    if (original_.id) {
      ledger::FrictionEdit edit;
      edit.at = e.at;
      edit.title = e.title;
      edit.category = e.category;
      edit.minutes = e.minutes;
      edit.usd = e.usd;
      edit.cause = e.cause;
      edit.fix = e.fix;
      edit.ecosystemSpecific = e.ecosystemSpecific;
      edit.boxId = e.boxId;
      edit.runId = e.runId;
      log.requestEdit(original_.id, edit);
      savedId_ = original_.id;
    } else {
      savedId_ = log.requestAdd(e);
    }
  } catch (const std::exception& ex) {
    error_->setText(QString::fromUtf8(ex.what()));
    error_->show();
    return;  // nothing changed; the dialog stays open
  }
  QDialog::accept();
}

}  // namespace crosslab::widgets
