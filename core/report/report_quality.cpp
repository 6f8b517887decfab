// Quality (per model, each instrument, the instruments' agreement) and the portability
// verdict over replication groups.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/eval/eval_store.h"
#include "core/eval/instrument_table.h"
#include "core/report/report_sections.h"
#include "core/store/lab_store.h"

namespace crosslab::report {
namespace {

std::string rateText(const eval::Rate& r) {
  if (r.total == 0) return "—";
  return std::to_string(std::lround(100.0 * r.value())) + "% (" + std::to_string(r.accepted) + "/" +
         std::to_string(r.total) + ")";
}

struct QuoteCount {
  int quotes = 0, fabricated = 0;
  bool measured = false;
};

// Per model: quotes checked and fabricated ones, from the "quotes" verdicts' details.
std::map<std::string, QuoteCount> quoteCounts(eval::EvalStore& es) {
  std::map<std::int64_t, std::string> modelOf;
  for (const auto& [id, model] : es.sampleModels()) modelOf[id] = model;
  std::map<std::string, QuoteCount> out;
  for (const auto& [sample, byInstrument] : es.currentVerdicts()) {
    const auto it = byInstrument.find("quotes");
    if (it == byInstrument.end()) continue;
    auto& q = out[modelOf[sample]];
    q.measured = true;
    try {
      const auto detail = nlohmann::json::parse(it->second.detailJson);
      if (!detail.is_array()) continue;
      for (const auto& quote : detail) {
        ++q.quotes;
        q.fabricated += quote.value("result", std::string()) == "fabricated";
      }
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::string sampleRows(eval::EvalStore& es, const std::string& model) {
  std::int64_t lo = 0, hi = 0, n = 0;
  for (const auto& [id, m] : es.sampleModels())
    if (m == model) {
      lo = n ? std::min(lo, id) : id;
      hi = std::max(hi, id);
      ++n;
    }
  return "samples model='" + model + "' (" + std::to_string(n) + " rows, ids " + std::to_string(lo) + "–" +
         std::to_string(hi) + "); verdicts on those samples (latest per instrument)";
}

}  // namespace

void addQuality(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Quality");
  eval::EvalStore es(ctx.lab);
  const auto table = eval::buildInstrumentTable(es);
  if (table.models.empty()) {
    doc.paragraph("No model outputs in this lab.");
    return;
  }
  const auto quotes = quoteCounts(es);
  std::vector<std::string> gates, others;
  for (const auto& i : table.instruments) {
    if (i == "format" || i == "quotes") continue;
    (i.rfind("gate:", 0) == 0 ? gates : others).push_back(i);
  }
  Table t;
  t.header = {"Model", "Format valid"};
  for (const auto& g : gates) t.header.push_back("Accepted (" + g + ")");
  t.header.push_back("Quote fidelity (mechanical)");
  for (const auto& o : others) t.header.push_back(o == "human" ? "Human reading" : o);
  for (const auto& m : table.models) {
    const auto rates = table.rates.count(m) ? table.rates.at(m) : std::map<std::string, eval::Rate>{};
    auto rate = [&](const std::string& i) { return rates.count(i) ? rateText(rates.at(i)) : std::string("—"); };
    std::vector<std::string> row = {m, rate("format")};
    for (const auto& g : gates) row.push_back(rate(g));
    std::string q = "—";
    if (auto it = quotes.find(m); it != quotes.end() && it->second.measured && it->second.quotes > 0) {
      const auto& c = it->second;
      q = std::to_string(std::lround(100.0 * (c.quotes - c.fabricated) / c.quotes)) + "% of quotes in context (" +
          std::to_string(c.fabricated) + " fabricated of " + std::to_string(c.quotes) + ")";
    }
    row.push_back(q);
    for (const auto& o : others) row.push_back(rate(o));
    t.rows.push_back(row);
    t.refs.push_back(doc.cite("Q", "quality: " + m, sampleRows(es, m)));
  }
  doc.table(std::move(t));
  std::vector<std::string> notes;
  if (gates.size() > 1)
    notes.push_back("Absolute acceptance rates from different gates are not comparable: compare models within one "
                    "gate's column, never across gates.");
  for (const auto& c : table.calibration)
    notes.push_back("Calibration: " + c.instrument + " accepts " + rateText(c.measured) + " of " + c.model +
                    "'s archived outputs, published as " + std::to_string(std::lround(100 * c.published)) +
                    "%; that published absolute score is not comparable with this gate's and is not used.");
  if (!notes.empty()) doc.list(notes);

  doc.heading("Instruments", 3);
  if (table.pairs.empty()) {
    doc.paragraph("Fewer than two instruments judged the same samples: no agreement to report.");
  } else {
    Table a;
    a.header = {"Instrument A", "Instrument B", "Samples", "Raw agreement", "Cohen's κ"};
    for (const auto& p : table.pairs)
      a.rows.push_back({p.a, p.b, std::to_string(p.result.n), fixedText(100 * p.result.raw, 0) + "%",
                        p.result.kappa ? fixedText(*p.result.kappa, 2) : "—"});
    doc.table(std::move(a));
    doc.paragraph(std::to_string(table.instruments.size()) + " instruments on one set of outputs; where they "
                  "disagree, each verdict above stands for its instrument only.");
  }
}

void addPortability(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Portability verdict");
  const auto runs = readTrainRuns(ctx.lab);
  eval::EvalStore es(ctx.lab);
  // Per model: its eval set with the most answers, per-question outcomes per instrument.
  std::map<std::string, std::map<std::string, std::vector<eval::StoredSample>>> byModel;
  for (auto& s : es.samples()) byModel[s.model][s.evalSha256].push_back(std::move(s));
  const auto labels = es.currentLabels();
  const auto quotes = quoteCounts(es);
  std::map<std::string, ModelAnswers> answers;
  for (const auto& [model, sets] : byModel) {
    const auto best = std::max_element(sets.begin(), sets.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    ModelAnswers a;
    a.evalSha = best->first;
    for (const auto& s : best->second) {
      const auto it = labels.find(s.id);
      if (it == labels.end()) continue;
      for (const auto& [instrument, verdict] : it->second)
        if (instrument == "format" || instrument.rfind("gate:", 0) == 0 || instrument == "human")
          a.instruments[instrument][s.questionId] = verdict == "accept";
    }
    if (auto q = quotes.find(model); q != quotes.end()) {
      a.quotesMeasured = q->second.measured;
      a.quotes = q->second.quotes;
      a.fabricated = q->second.fabricated;
    }
    answers[model] = std::move(a);
  }
  std::vector<ReplicaRun> replicas;
  std::vector<std::string> unknown;
  for (const auto& r : runs) {
    ReplicaRun rr{r.id, r.name, r.venue, r.weightsSha, r.dataSha, recipeKey(r.recipeJson), r.loss, {}};
    if (byModel.count(r.name)) rr.model = r.name;
    else if (!r.runDir.empty() && byModel.count(std::filesystem::path(r.runDir).filename().string()))
      rr.model = std::filesystem::path(r.runDir).filename().string();
    if (rr.weightsSha.empty() || rr.dataSha.empty() || rr.recipeSha.empty()) unknown.push_back(r.name);
    replicas.push_back(std::move(rr));
  }
  const auto groups = replicationGroups(replicas, answers);
  if (groups.empty()) {
    doc.paragraph("No replication group: no two runs share the base weights, the data and the recipe on different "
                  "venues, so this lab answers nothing about portability yet." +
                  (unknown.empty() ? std::string()
                                   : " Runs whose weights, data or recipe could not be identified: " + [&] {
                                       std::string s;
                                       for (const auto& u : unknown) s += (s.empty() ? "" : ", ") + u;
                                       return s;
                                     }() + "."));
    return;
  }
  int n = 0;
  for (const auto& g : groups) {
    ++n;
    doc.heading("Group " + std::to_string(n) + ": weights " + g.weightsSha.substr(0, 12) + "…, data " +
                    g.dataSha.substr(0, 12) + "…, recipe " + g.recipeSha.substr(0, 12) + "…",
                3);
    std::string ids;
    for (const auto& r : g.runs) ids += (ids.empty() ? "runs.id=" : ",") + std::to_string(r.runId);
    const std::string ref = doc.cite("P", "replication group " + std::to_string(n),
                                     ids + "; their metrics rows; samples and verdicts of their models");
    Table t;
    t.header = {"Run", "Venue", "Loss, last 10% of steps (mean ± sd)", "Steps", "Answers"};
    ChartSpec chart;
    chart.title = "Group " + std::to_string(n) + ": loss curves overlaid";
    chart.xLabel = "step";
    chart.yLabel = "loss";
    for (size_t i = 0; i < g.runs.size(); ++i) {
      const auto& r = g.runs[i];
      const auto& tail = g.tails[i];
      t.rows.push_back({r.run, r.venue,
                        tail ? fixedText(tail->mean, 4) + " ± " + fixedText(tail->spread, 4) + " (steps " +
                                   std::to_string(tail->fromStep) + "–" + std::to_string(tail->toStep) + ")"
                             : "—",
                        r.loss.empty() ? "—" : std::to_string(static_cast<long long>(r.loss.back().first)),
                        r.model.empty() ? "none in the lab" : r.model});
      t.refs.push_back(ref);
      chart.series.push_back({r.run + " loss", r.loss, static_cast<int>(i), true, false});
      chart.series.push_back({r.run + " (" + r.venue + ")", smoothEma(r.loss), static_cast<int>(i), false, false});
    }
    doc.table(std::move(t));
    doc.chart(std::move(chart), "charts/group-" + std::to_string(n) + "-loss.svg");
    Table c;
    c.header = {"Instrument", "A", "B", "Paired questions", "A only / B only", "Exact McNemar p"};
    for (const auto& cmp : g.comparisons)
      for (const auto& r : cmp.instruments)
        c.rows.push_back({r.instrument, cmp.a + " " + std::to_string(r.aAccepted) + "/" + std::to_string(r.n),
                          cmp.b + " " + std::to_string(r.bAccepted) + "/" + std::to_string(r.n), std::to_string(r.n),
                          std::to_string(r.b) + " / " + std::to_string(r.c), fixedText(r.p, 4)});
    for (const auto& cmp : g.comparisons)
      if (cmp.quotesA && cmp.quotesB)
        c.rows.push_back({"fabricated quotes", cmp.a + " " + std::to_string(cmp.quotesA->first) + " of " +
                                                   std::to_string(cmp.quotesA->second),
                          cmp.b + " " + std::to_string(cmp.quotesB->first) + " of " + std::to_string(cmp.quotesB->second),
                          "—", "—", "side by side (no test)"});
    if (!c.rows.empty()) doc.table(std::move(c));
    doc.paragraph("Verdict: " + g.verdict);
  }
}

}  // namespace crosslab::report
