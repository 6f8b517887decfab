#pragma once
// What the Review panel's text views show, computed without widgets: the question's
// contexts as one text with each evidence quote's matched span, and an output
// pretty-printed with each quote located in it. Positions are QString (UTF-16) offsets,
// converted from the checker's UTF-8 byte spans.

#include <QString>
#include <QVector>

#include "core/eval/eval_data.h"
#include "core/eval/output_check.h"
#include "core/eval/output_diff.h"

namespace crosslab::widgets {

struct Highlight {
  int start = 0;   // UTF-16 offset in the view's text
  int length = 0;
  eval::QuoteKind kind = eval::QuoteKind::Fabricated;
  int quote = -1;  // index into the sample's quotes
};

struct ContextsText {
  QString text;                  // "[1]\n<context 1>\n\n[2]\n…"
  QVector<int> contextStart;     // offset of each context's first character
  QVector<QString> contexts;     // each context as a QString (reused for span conversion)
};

struct OutputText {
  QString text;                  // pretty-printed JSON when the output parsed, else the raw text
  QVector<Highlight> quotes;     // one per quote found in the text
};

ContextsText contextsText(const eval::EvalQuestion& question);
// Matched spans (exact and fuzzy) of a sample's quotes, in contextsText coordinates.
QVector<Highlight> contextHighlights(const ContextsText& view, const eval::EvalQuestion& question,
                                     const eval::SampleCheck& sample);
OutputText outputText(const eval::SampleCheck& sample);
// HTML of a diff: removed (only in A) struck red, added (only in B) green.
QString diffHtml(const eval::OutputDiff& diff);

}  // namespace crosslab::widgets
