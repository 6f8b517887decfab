#include "widgets/venue_dialogs.h"

#include <QComboBox>
#include <QDateTimeEdit>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTimeZone>
#include <QVBoxLayout>

#include "backends/providers/hotaisle_client.h"
#include "core/venues/meter.h"

namespace crosslab::widgets {
namespace {

QString money(double usd) { return QString("$%1").arg(usd, 0, 'f', 2); }

}  // namespace

AddBoxDialog::AddBoxDialog(QSet<QString> takenNames, QWidget* parent) : QDialog(parent), taken_(std::move(takenNames)) {
  setWindowTitle(tr("Add box"));
  setObjectName("addBoxDialog");
  auto* form = new QFormLayout;
  name_ = new QLineEdit(this);
  name_->setObjectName("addBoxName");
  name_->setPlaceholderText(tr("spark-1"));
  host_ = new QLineEdit(this);
  host_->setObjectName("addBoxHost");
  host_->setPlaceholderText(tr("host name or address"));
  port_ = new QSpinBox(this);
  port_->setObjectName("addBoxPort");
  port_->setRange(1, 65535);
  port_->setValue(22);
  user_ = new QLineEdit(this);
  user_->setObjectName("addBoxUser");
  key_ = new QLineEdit(this);
  key_->setObjectName("addBoxKey");
  key_->setPlaceholderText(tr("private key file (empty: ssh-agent, then ~/.ssh)"));
  price_ = new QDoubleSpinBox(this);
  price_->setObjectName("addBoxPrice");
  price_->setRange(0, 1000);
  price_->setDecimals(2);
  price_->setPrefix("$");
  price_->setSuffix(tr("/h"));
  price_->setSpecialValueText(tr("not billed"));
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Host"), host_);
  form->addRow(tr("Port"), port_);
  form->addRow(tr("User"), user_);
  form->addRow(tr("Key file"), key_);
  form->addRow(tr("Price"), price_);
  problem_ = new QLabel(this);
  problem_->setObjectName("addBoxProblem");
  problem_->setWordWrap(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  ok_ = buttons->button(QDialogButtonBox::Ok);
  ok_->setText(tr("Add"));
  ok_->setObjectName("addBoxOk");
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(problem_);
  v->addWidget(buttons);
  for (auto* e : {name_, host_, user_, key_}) connect(e, &QLineEdit::textChanged, this, &AddBoxDialog::validate);
  validate();
}

void AddBoxDialog::validate() {
  QString why;
  const QString name = name_->text().trimmed();
  if (name.isEmpty()) why = tr("Give the box a name.");
  else if (taken_.contains(name)) why = tr("A box named %1 is already in the lab.").arg(name);
  else if (host_->text().trimmed().isEmpty()) why = tr("Enter the host.");
  else if (user_->text().trimmed().isEmpty()) why = tr("Enter the login user.");
  else if (!key_->text().trimmed().isEmpty() && !QFileInfo(key_->text().trimmed()).isFile())
    why = tr("No key file at %1.").arg(key_->text().trimmed());
  problem_->setText(why);
  ok_->setEnabled(why.isEmpty());
}

venues::BoxRow AddBoxDialog::box() const {
  venues::BoxRow b;
  b.name = name_->text().trimmed().toStdString();
  b.host = host_->text().trimmed().toStdString();
  b.port = port_->value();
  b.user = user_->text().trimmed().toStdString();
  if (!key_->text().trimmed().isEmpty()) b.keyFile = QFileInfo(key_->text().trimmed()).absoluteFilePath().toStdString();
  if (price_->value() > 0) b.pricePerHour = price_->value();
  return b;
}

MilestoneDialog::MilestoneDialog(const QStringList& venues, const QString& venue, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Add milestone"));
  setObjectName("milestoneDialog");
  venue_ = new QComboBox(this);
  venue_->setObjectName("milestoneVenue");
  venue_->setEditable(true);
  venue_->addItems(venues);
  venue_->setCurrentText(venue);
  name_ = new QComboBox(this);
  name_->setObjectName("milestoneName");
  name_->setEditable(true);
  namespace m = venues::milestone;
  for (const char* n : {m::kAccountCreated, m::kKeyMinted, m::kProvisionRequest, m::kSshReady, m::kFirstToken})
    name_->addItem(QString::fromLatin1(n));
  at_ = new QDateTimeEdit(QDateTime::currentDateTimeUtc(), this);
  at_->setObjectName("milestoneAt");
  at_->setTimeSpec(Qt::UTC);
  at_->setDisplayFormat("yyyy-MM-dd HH:mm:ss 'UTC'");
  note_ = new QLineEdit(this);
  note_->setObjectName("milestoneNote");
  auto* form = new QFormLayout;
  form->addRow(tr("Venue"), venue_);
  form->addRow(tr("Milestone"), name_);
  form->addRow(tr("When"), at_);
  form->addRow(tr("Note"), note_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  ok_ = buttons->button(QDialogButtonBox::Ok);
  ok_->setText(tr("Add"));
  ok_->setObjectName("milestoneOk");
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(venue_, &QComboBox::currentTextChanged, this, &MilestoneDialog::validate);
  connect(name_, &QComboBox::currentTextChanged, this, &MilestoneDialog::validate);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(buttons);
  validate();
}

void MilestoneDialog::validate() {
  ok_->setEnabled(!venue_->currentText().trimmed().isEmpty() && !name_->currentText().trimmed().isEmpty());
}

QString MilestoneDialog::venue() const { return venue_->currentText().trimmed(); }

venues::Milestone MilestoneDialog::milestone() const {
  venues::Milestone m;
  m.name = name_->currentText().trimmed().toStdString();
  m.at = static_cast<double>(at_->dateTime().toUTC().toSecsSinceEpoch());
  m.source = "entered";
  m.note = note_->text().trimmed().toStdString();
  return m;
}

QString rentQuestion(const providers::Offer& offer) {
  return QObject::tr("Rent %1× %2 at %3/h?\n\nBilling starts now and is at least %4 minute(s) (%5), and runs until "
                     "you tear the box down.")
      .arg(offer.gpuCount)
      .arg(QString::fromStdString(offer.gpuModel))
      .arg(money(offer.pricePerHour))
      .arg(offer.minMinutes)
      .arg(money(offer.pricePerHour * offer.minMinutes / 60.0));
}

QString hostKeyQuestion(const QString& where, const QString& fingerprint, const QString& knownHostsFile) {
  return QObject::tr("crosslab has not connected to %1 before. It presents this host key:\n\n    %2\n\n"
                     "Is this the machine you mean? Compare the fingerprint with what its provider or administrator "
                     "shows.\n\nYes trusts this key: it is added to %3 and the command runs; from then on a different "
                     "key for this host is refused.\nNo connects nothing and runs nothing.")
      .arg(where, fingerprint, knownHostsFile);
}

QString billingQuestion(const QString& action, const std::vector<venues::BoxRow>& boxes,
                        const std::vector<double>& costs) {
  QString list;
  double total = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const auto& b = boxes[i];
    const double cost = i < costs.size() ? costs[i] : 0;
    total += cost;
    list += QObject::tr("  • %1 — %2/h, %3 so far%4\n")
                .arg(QString::fromStdString(b.name))
                .arg(money(b.pricePerHour.value_or(0)))
                .arg(money(cost))
                .arg(b.rented() ? QString() : QObject::tr(" (added by hand: crosslab cannot end it)"));
  }
  return QObject::tr("%n box(es) still bill(s) by the hour:\n\n%1\nTotal so far %2. %3 anyway?\n\n"
                     "Tear down: ends the rented VMs at their provider first (their cost is booked).\n"
                     "Leave running: the meter keeps running; reopening the lab shows them.\n"
                     "Cancel: stay here.",
                     nullptr, static_cast<int>(boxes.size()))
      .arg(list, money(total), action);
}

}  // namespace crosslab::widgets
