#include "widgets/instrument_grid.h"

#include <QCoreApplication>

#include <cmath>

#include "core/eval/quote_checker.h"

namespace crosslab::widgets {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("InstrumentGrid", text); }

QString count(size_t n, size_t of) { return QString("%1/%2").arg(n).arg(of); }

QString percent(double v) { return QString("%1%").arg(std::lround(100 * v)); }

QString instrumentTitle(const std::string& name) {
  if (name == "format") return tr("format accepted");
  if (name == "quotes") return tr("quotes accepted");
  if (name.rfind("gate:", 0) == 0) return tr("gate %1").arg(QString::fromStdString(name.substr(5)));
  if (name.rfind("judge:", 0) == 0) return tr("judge %1").arg(QString::fromStdString(name.substr(6)));
  return QString::fromStdString(name);
}

QString instrumentTip(const std::string& name) {
  if (name == "format") return tr("Outputs that parse as the answer JSON (strict or fenced)");
  if (name == "quotes") return tr("Outputs whose quotes are all found in context (exact or fuzzy), at least one quote");
  if (name.rfind("gate:", 0) == 0) return tr("Accepted by the judge gate (its judges agree)");
  if (name.rfind("judge:", 0) == 0) return tr("Accepted by this judge alone");
  if (name == "human") return tr("Your accept / reject verdicts (a / r)");
  return {};
}

}  // namespace

QString quoteRuleText() {
  return tr("Quotes: %1. %2.")
      .arg(QString::fromUtf8(eval::QuoteChecker::kExactRule), QString::fromUtf8(eval::QuoteChecker::kFuzzyRule));
}

QString quoteRuleShort() {
  return tr("Quotes — exact: verbatim; only whitespace, Unicode form and curly quotes/dashes may differ, letter case "
            "must match · fuzzy: case ignored, or ≥ 80% of its 4-word runs in one context");
}

InstrumentGrid instrumentGrid(const eval::InstrumentTable& t, bool blind) {
  InstrumentGrid g;
  const bool mechanical = !t.mechanical.empty();
  if (mechanical) {
    g.columns << tr("JSON strict") << tr("fenced") << tr("invalid") << tr("quotes exact") << tr("fuzzy") << tr("fabricated")
              << tr("fidelity");
    g.columnTips << tr("Outputs that are the answer JSON and nothing else") << tr("JSON inside a ``` fence")
                 << tr("Outputs that do not parse as the answer JSON") << quoteRuleText() << quoteRuleText()
                 << tr("Quotes found in no context") << tr("Quotes found in context (exact + fuzzy) of all quotes");
  }
  std::vector<std::string> instruments = t.instruments;
  if (std::find(instruments.begin(), instruments.end(), "human") == instruments.end()) instruments.push_back("human");
  for (const auto& name : instruments) {
    g.columns << instrumentTitle(name);
    g.columnTips << instrumentTip(name);
  }
  for (size_t r = 0; r < t.models.size(); ++r) {
    const std::string& model = t.models[r];
    g.rows << (blind ? tr("model %1").arg(r + 1) : QString::fromStdString(model));
    QStringList cells;
    if (mechanical) {
      auto it = t.mechanical.find(model);
      const eval::ModelSummary m = it == t.mechanical.end() ? eval::ModelSummary{} : it->second;
      cells << count(m.jsonValid, m.samples) << count(m.jsonFenced, m.samples)
            << count(m.samples - m.jsonValid - m.jsonFenced, m.samples);
      if (m.quotes == 0) {
        cells << tr("no quotes") << QString("–") << QString("–") << QString("–");
      } else {
        cells << count(m.exact, m.quotes) << count(m.fuzzy, m.quotes) << count(m.fabricated, m.quotes)
              << QString("%1 (%2/%3)").arg(percent(m.fidelity())).arg(m.exact + m.fuzzy).arg(m.quotes);
      }
    }
    auto rates = t.rates.find(model);
    for (const auto& name : instruments) {
      eval::Rate rate;
      if (rates != t.rates.end())
        if (auto it = rates->second.find(name); it != rates->second.end()) rate = it->second;
      const QString cell = QString::fromStdString(eval::rateCell(rate));
      cells << (cell.isEmpty() ? QString("–") : cell);
    }
    g.cells << cells;
  }
  QStringList lines;
  for (const auto& p : t.pairs) {
    const QString kappa = p.result.kappa ? QString::number(*p.result.kappa, 'f', 2) : tr("undefined (one label only)");
    lines << tr("%1 vs %2: κ %3, raw agreement %4 over %5 outputs")
                 .arg(instrumentTitle(p.a), instrumentTitle(p.b), kappa, percent(p.result.raw))
                 .arg(p.result.n);
  }
  if (lines.isEmpty() && !t.models.empty()) lines << tr("κ: no two instruments have judged the same outputs yet.");
  for (const auto& c : t.calibration)
    lines << tr("calibration: %1 published %2 → %3 under %4 (n %5); absolute scores across instruments are not comparable")
                 .arg(blind ? tr("a model") : QString::fromStdString(c.model), percent(c.published), percent(c.measured.value()),
                      instrumentTitle(c.instrument))
                 .arg(c.measured.total);
  g.agreement = lines.join('\n');
  return g;
}

}  // namespace crosslab::widgets
