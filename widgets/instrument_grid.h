#pragma once
// The Review panel's instruments table as text cells: one row per model, the mechanical
// breakdown (JSON strict / fenced / invalid, quotes exact / fuzzy / fabricated, fidelity)
// when the outputs were checked, then every instrument's acceptance rate (format, quotes,
// each gate and judge, human — human always, "–" until a verdict is given; "not measured"
// where an instrument gave verdicts but measured none), and below it kappa between every
// two instruments and the calibration lines. Kept apart from the panel so that the
// wording is one function, and testable without widgets.

#include <QString>
#include <QStringList>
#include <QVector>

#include "core/eval/instrument_table.h"

namespace crosslab::widgets {

struct InstrumentGrid {
  QStringList rows;             // model names, or "model N" in blind mode
  QStringList columns;          // header labels
  QStringList columnTips;       // what each column counts
  QVector<QStringList> cells;   // [row][column]
  QString agreement;            // kappa and calibration lines (plain text)
};

InstrumentGrid instrumentGrid(const eval::InstrumentTable& table, bool blind);

// What "exact" and "fuzzy" allow: the rule in full (tooltips), and in one line (the legend).
QString quoteRuleText();
QString quoteRuleShort();

}  // namespace crosslab::widgets
