#include "widgets/recipe_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSpinBox>

#include <climits>

namespace crosslab::widgets {

using train::RecipeField;
using Kind = RecipeField::Kind;

namespace {

bool inForm(const RecipeField& f) { return f.uses(RecipeField::Dialog) && f.kind != Kind::Path; }

int clampInt(double v) { return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : int(v); }

}  // namespace

RecipeForm::RecipeForm(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 0, 0, 0);
  QHash<QString, QFormLayout*> forms;
  int column = 0, row = 0;
  for (const auto& f : train::recipeFields()) {
    if (!inForm(f)) continue;
    const QString group = QString::fromStdString(f.group);
    if (!forms.contains(group)) {
      auto* box = new QGroupBox(group, this);
      box->setObjectName("group_" + group);
      forms[group] = new QFormLayout(box);
      groups_[group] = box;
      grid->addWidget(box, row, column);
      if (++column == 2) {
        column = 0;
        ++row;
      }
    }
    QWidget* w = nullptr;
    const QString key = QString::fromStdString(f.key);
    if (f.kind == Kind::Targets) {
      w = new QWidget(this);
      auto* l = new QHBoxLayout(w);
      l->setContentsMargins(0, 0, 0, 0);
      for (const char* t : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}) {
        auto* c = new QCheckBox(QString(t).remove("_proj"), w);
        c->setObjectName(t);
        c->setChecked(true);
        targets_ << c;
        l->addWidget(c);
        connect(c, &QCheckBox::toggled, this, &RecipeForm::changed);
      }
    } else if (!f.choices.empty()) {
      auto* c = new QComboBox(this);
      for (const auto& choice : f.choices) c->addItem(QString::fromStdString(choice));
      connect(c, &QComboBox::currentTextChanged, this, &RecipeForm::changed);
      w = c;
    } else if (f.kind == Kind::Int) {
      auto* s = new QSpinBox(this);
      s->setRange(clampInt(f.min), f.max > f.min ? clampInt(f.max) : INT_MAX);
      connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &RecipeForm::changed);
      w = s;
    } else if (f.kind == Kind::Real) {
      auto* s = new QDoubleSpinBox(this);
      s->setDecimals(f.decimals);
      s->setRange(f.min, f.max > f.min ? f.max : 1e12);
      s->setSingleStep(f.decimals >= 5 ? 1e-5 : f.decimals >= 2 ? 0.01 : 1);
      connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &RecipeForm::changed);
      w = s;
    } else if (f.kind == Kind::Bool) {
      auto* c = new QCheckBox(this);
      connect(c, &QCheckBox::toggled, this, &RecipeForm::changed);
      w = c;
    } else {
      auto* e = new QLineEdit(this);
      connect(e, &QLineEdit::textChanged, this, &RecipeForm::changed);
      w = e;
    }
    w->setObjectName("field_" + key);
    w->setToolTip(QString::fromStdString(f.help));
    widgets_[key] = w;
    forms[group]->addRow(QString::fromStdString(f.label), w);
  }
  setRecipe(train::Recipe::labDefaults());
}

QString RecipeForm::textOf(const RecipeField& f) const {
  QWidget* w = widgets_.value(QString::fromStdString(f.key));
  if (f.kind == Kind::Targets) {
    QStringList on;
    for (auto* c : targets_)
      if (c->isChecked()) on << c->objectName();
    return on.size() == targets_.size() ? QString("all") : on.join(',');
  }
  if (auto* combo = qobject_cast<QComboBox*>(w)) return combo->currentText();
  if (auto* spin = qobject_cast<QSpinBox*>(w)) return QString::number(spin->value());
  if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) return QString::number(real->value(), 'g', 10);
  if (auto* check = qobject_cast<QCheckBox*>(w)) return check->isChecked() ? "true" : "false";
  if (auto* edit = qobject_cast<QLineEdit*>(w)) return edit->text().trimmed();
  return {};
}

void RecipeForm::setText(const RecipeField& f, const QString& text) {
  QWidget* w = widgets_.value(QString::fromStdString(f.key));
  if (f.kind == Kind::Targets) {
    const QStringList on = text == "all" ? QStringList() : text.split(',');
    for (auto* c : targets_) c->setChecked(text == "all" || on.contains(c->objectName()));
    return;
  }
  if (auto* combo = qobject_cast<QComboBox*>(w)) combo->setCurrentText(text);
  else if (auto* spin = qobject_cast<QSpinBox*>(w)) spin->setValue(text.toInt());
  else if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) real->setValue(text.toDouble());
  else if (auto* check = qobject_cast<QCheckBox*>(w)) check->setChecked(text == "true");
  else if (auto* edit = qobject_cast<QLineEdit*>(w)) edit->setText(text);
}

void RecipeForm::setRecipe(const train::Recipe& r) {
  const QSignalBlocker block(this);
  for (const auto& f : train::recipeFields())
    if (inForm(f)) setText(f, QString::fromStdString(train::recipeFieldText(r, f)));
  emit changed();
}

void RecipeForm::applyTo(train::Recipe& r, QStringList* problems) const {
  for (const auto& f : train::recipeFields()) {
    if (!inForm(f)) continue;
    const QString text = textOf(f);
    if (f.kind == Kind::Targets && text.isEmpty()) {
      r.loraTargets.clear();  // validate() names it
      continue;
    }
    try {
      train::setRecipeField(r, f, text.toStdString());
    } catch (const std::exception& e) {
      if (problems) *problems << QString::fromStdString(e.what());
    }
  }
}

void RecipeForm::setGroupVisible(const QString& group, bool visible) {
  if (auto* g = groups_.value(group)) g->setVisible(visible);
}

}  // namespace crosslab::widgets
