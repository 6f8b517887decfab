#pragma once
// The recipe as a form, built from the recipe's field table (train::recipeFields()): one
// widget per dialog field, grouped as the table groups them, each named
// "field_<key>" (QSpinBox, QDoubleSpinBox, QComboBox, QCheckBox, QLineEdit; the LoRA
// targets as one checkbox per module). The paths (model, data) are the New Run dialog's
// own business and are not here.

#include <QHash>
#include <QWidget>

#include "core/train/recipe.h"

class QCheckBox;

namespace crosslab::widgets {

class RecipeForm : public QWidget {
  Q_OBJECT
 public:
  explicit RecipeForm(QWidget* parent = nullptr);

  // Sets every field shown here from `r` (the others are left as they are).
  void setRecipe(const train::Recipe& r);
  // Writes every field shown here into `r`; a value the recipe refuses goes to *problems.
  void applyTo(train::Recipe& r, QStringList* problems) const;
  QWidget* fieldWidget(const QString& key) const { return widgets_.value(key); }
  // Shows or hides the fields of a group ("Venue" only matters on a box).
  void setGroupVisible(const QString& group, bool visible);

 signals:
  void changed();

 private:
  QString textOf(const train::RecipeField& f) const;
  void setText(const train::RecipeField& f, const QString& text);

  QHash<QString, QWidget*> widgets_;          // key -> editor
  QHash<QString, QWidget*> groups_;           // group -> box
  QList<QCheckBox*> targets_;
};

}  // namespace crosslab::widgets
